package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-gpu/tessera/scheduler/daemon"
)

func init() { register(newExplainCommand) }

func newExplainCommand() *cobra.Command {
	var kubeconfig, config, profile, output string
	cmd := &cobra.Command{
		Use:   "explain (pod NAMESPACE/NAME | podgroup NAMESPACE/NAME | queue NAME)",
		Short: "Explain why a job is pending, or where it runs and on which GPUs",
		Long: `Read the live cluster (kubeconfig) and say where a pod or gang runs and on which GPUs,
or why it waits: the reason the scheduler writes on the PodGroup and the pods' events,
and what would have to change. For a queue: its GPUs allocated, deserved and capability,
and its pending jobs with their reasons. It runs one scheduling session over a snapshot
of the cluster and changes nothing.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, scfg, err := liveClient(kubeconfig, config, profile, output)
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
	liveFlags(cmd, "kubeconfig file; empty: $KUBECONFIG or the in-cluster config", &kubeconfig, &config, &profile, &output)
	return cmd
}
