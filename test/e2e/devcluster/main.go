// Command devcluster brings up the end-to-end test's cluster to try Tessera without
// GPUs: a local control plane with fake GPU nodes (kwok and go-nvml's simulated
// servers), Cluster API, Flux syncing the example configuration from a local git
// repository, Prometheus, and Tessera's scheduler, webhook, autoscaler and node agents.
// Everything listens on 127.0.0.1 only; Ctrl-C tears it down. `make dev-cluster` runs
// it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tessera-gpu/tessera/nodeagent/nvidia/nvidiatest"
	"github.com/tessera-gpu/tessera/test/e2e"
)

func main() {
	nodes := flag.Int("nodes", e2e.DevNodes, "fake GPU nodes (Machines of one MachineDeployment)")
	gpus := flag.String("gpus", e2e.DevGPUs, "simulated GPU server of every node (dgxa100, dgxa100-80gb, dgxh100, pcie-a100)")
	flag.Parse()
	if *nodes < 1 || *nodes > 50 {
		fmt.Fprintf(os.Stderr, "dev-cluster: --nodes must be between 1 and 50 (one process per node agent), got %d\n", *nodes)
		os.Exit(2)
	}
	if _, err := nvidiatest.ByName(*gpus); err != nil {
		fmt.Fprintf(os.Stderr, "dev-cluster: --gpus: %v\n", err)
		os.Exit(2)
	}
	if err := run(*nodes, *gpus); err != nil {
		fmt.Fprintln(os.Stderr, "dev-cluster:", err)
		os.Exit(1)
	}
}

func run(nodes int, gpus string) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) {
		fmt.Printf("%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	c, rev, err := e2e.StartDev(ctx, nodes, gpus, logf)
	if c != nil {
		defer func() {
			logf("stopping every component")
			c.Stop()
			if err == nil {
				_ = os.RemoveAll(c.Dir)
			}
		}()
	}
	if err != nil {
		if c != nil {
			fmt.Fprintln(os.Stderr, c.Logs(20))
		}
		return err
	}
	logf("Flux applied gitops/clusters/example (commit %s)", rev[:8])
	fmt.Printf(`
Tessera is running on %d fake GPU nodes. In another shell:

  export KUBECONFIG=%s
  kubectl get nodes -L tessera.dev/gpu-model,tessera.dev/gpu-count
  kubectl get queues,gpunodes,scaledownpolicies
  kubectl apply -f - <<'YAML'
  apiVersion: batch/v1
  kind: Job
  metadata: {name: finetune, namespace: research}
  spec:
    parallelism: 2
    completions: 2
    template:
      metadata: {annotations: {%s: 60s}}
      spec:
        restartPolicy: Never
        containers:
        - name: train
          image: train
          resources: {limits: {nvidia.com/gpu: 4}}
  YAML
  kubectl get pods -n research -o wide
  bin/tessera explain pod research/<pod>          # why a pod waits
  bin/tessera explain queue train-dev
  bin/tessera autoscaler plan                     # what the autoscaler would remove

Nodes idle for a minute are removed through Cluster API (kubectl get machines -A).
Prometheus: %s   Git repository Flux syncs: %s
Component logs: %s
Ctrl-C stops everything.
`, nodes, c.Kubeconfig, e2e.FakeRuntime, c.Prometheus, c.Git.URL, c.Dir+"/logs")
	<-ctx.Done()
	return nil
}
