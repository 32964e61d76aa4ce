package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-gpu/tessera/internal/kubeclient"

	"github.com/tessera-gpu/tessera/scheduler/daemon"
)

func init() { register(newExplainCommand) }

func newExplainCommand() *cobra.Command {
	var config, profile, output string
	var kube kubeclient.Options
	cmd := &cobra.Command{
		Use:   "explain (pod NAMESPACE/NAME | podgroup NAMESPACE/NAME | queue NAME)",
		Short: "Explain why a job is pending, or where it runs and on which GPUs",
		Long: `Read the live cluster (kubeconfig) and say where a pod or gang runs and on which GPUs,
or why it waits: the reason the scheduler writes on the PodGroup and the pods' events,
and what would have to change. A pod the node agent evicted for GPU-memory pressure
says so, from its GPUMemoryPressure event. For a queue: its GPUs allocated, deserved and capability,
and its pending jobs with their reasons. It runs one scheduling session over a snapshot
of the cluster and changes nothing.`,
		Args: explainArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, scfg, err := liveClient(kube, config, profile, output)
			if err != nil {
				return err
			}
			e, err := daemon.Explain(cmd.Context(), c, scfg, args[0], args[1], time.Now())
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), e)
			}
			return e.WriteText(cmd.OutOrStdout())
		},
	}
	liveFlags(cmd, "", &kube, &config, &profile, &output)
	return cmd
}

// explainArgs checks explain's arguments before anything reads the cluster: a kind
// daemon.Explain knows and a name of the form it takes.
func explainArgs(_ *cobra.Command, args []string) error {
	const usage = "explain pod NAMESPACE/NAME, podgroup NAMESPACE/NAME or queue NAME"
	if len(args) != 2 {
		return fmt.Errorf("%d argument(s): %s", len(args), usage)
	}
	kind, name := args[0], args[1]
	switch kind {
	case "pod", "pods", "po", "podgroup", "podgroups", "pg":
		if ns, n, ok := strings.Cut(name, "/"); !ok || ns == "" || n == "" || strings.Contains(n, "/") {
			return fmt.Errorf("%s %q: give it as NAMESPACE/NAME", kind, name)
		}
	case "queue", "queues", "tq":
		if name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("%s %q: a queue is cluster-scoped, give its NAME", kind, name)
		}
	default:
		return fmt.Errorf("unknown kind %q: %s", kind, usage)
	}
	return nil
}
