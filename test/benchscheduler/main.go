package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tessera-gpu/tessera/test/testenv"
)

// Case is one workload's figures.
type Case struct {
	Name                  string  `json:"name"`
	TesseraPodsPerS       float64 `json:"tessera_pods_per_s"`
	KubeSchedulerPodsPerS float64 `json:"kube_scheduler_pods_per_s,omitempty"`
	CeilingPodsPerS       float64 `json:"ceiling_pods_per_s"`
	VsKubeScheduler       float64 `json:"tessera_vs_kube_scheduler,omitempty"`
	OfCeiling             float64 `json:"tessera_of_ceiling"`
	Pods                  int     `json:"pods"`
	Nodes                 int     `json:"nodes"`
}

// Report is out/bench-scheduler.json.
type Report struct {
	Cases []Case `json:"cases"`
	// HeapMiB is the scheduler process's live heap after scheduling HeapPods pods on
	// HeapNodes nodes (absent unless -heap-pods is set).
	HeapMiB   float64 `json:"heap_mib,omitempty"`
	HeapNodes int     `json:"heap_nodes,omitempty"`
	HeapPods  int     `json:"heap_pods,omitempty"`
}

func main() {
	nodes := flag.Int("nodes", 1000, "nodes, 8 GPUs each")
	pods := flag.Int("pods", 7000, "one-GPU pods per case")
	cases := flag.String("cases", "single,gang8", "cases to run")
	out := flag.String("o", "out/bench-scheduler.json", "JSON report")
	kubeScheduler := flag.String("kube-scheduler", "", "kube-scheduler binary; empty: skip it")
	heapNodes := flag.Int("heap-nodes", 0, "nodes for the heap measurement (0: skip it)")
	heapPods := flag.Int("heap-pods", 0, "pods for the heap measurement")
	timeout := flag.Duration("timeout", 5*time.Minute, "limit for one scheduler to bind every pod")
	flag.Parse()
	if err := run(*nodes, *pods, *cases, *out, *kubeScheduler, *heapNodes, *heapPods, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "benchscheduler:", err)
		os.Exit(1)
	}
}

func run(nodes, pods int, cases, out, kubeScheduler string, heapNodes, heapPods int, timeout time.Duration) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	env, err := testenv.New(testenv.Options{})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	b, err := newBench(env, timeout, out)
	if err != nil {
		return err
	}
	ctx := context.Background()
	var rep Report
	if nodes > 0 && pods > 0 {
		if err := b.nodes(ctx, nodes); err != nil {
			return err
		}
		for _, name := range splitList(cases) {
			gang := 1
			switch name {
			case "single":
			case "gang8":
				gang = 8
			default:
				return fmt.Errorf("-cases: unknown case %q; known: single, gang8", name)
			}
			c := Case{Name: name, Pods: pods, Nodes: nodes}
			if c.CeilingPodsPerS, err = b.measure(ctx, name+"-ceiling", pods, gang, b.ceiling()); err != nil {
				return err
			}
			if c.TesseraPodsPerS, err = b.measure(ctx, name+"-tessera", pods, gang, b.tessera()); err != nil {
				return err
			}
			if kubeScheduler != "" {
				if c.KubeSchedulerPodsPerS, err = b.measure(ctx, name+"-kube", pods, gang, b.kubeScheduler(kubeScheduler)); err != nil {
					return err
				}
				c.VsKubeScheduler = c.TesseraPodsPerS / c.KubeSchedulerPodsPerS
			}
			c.OfCeiling = c.TesseraPodsPerS / c.CeilingPodsPerS
			fmt.Printf("%-7s tessera %7.0f pods/s   kube-scheduler %7.0f pods/s   ceiling %7.0f pods/s   tessera/kube %.2fx   tessera/ceiling %.0f%%\n",
				name, c.TesseraPodsPerS, c.KubeSchedulerPodsPerS, c.CeilingPodsPerS, c.VsKubeScheduler, 100*c.OfCeiling)
			rep.Cases = append(rep.Cases, c)
		}
	}
	if heapPods > 0 {
		if err := b.nodes(ctx, heapNodes); err != nil {
			return err
		}
		mib, err := b.heap(ctx, heapPods)
		if err != nil {
			return err
		}
		rep.HeapMiB, rep.HeapNodes, rep.HeapPods = mib, heapNodes, heapPods
		fmt.Printf("heap after scheduling %d pods on %d nodes: %.0f MiB\n", heapPods, heapNodes, mib)
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(data, '\n'), 0o644)
}
