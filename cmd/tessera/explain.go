package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tessera-gpu/tessera/scheduler/k8s"
)

func init() { register(newExplainCommand) }

func newExplainCommand() *cobra.Command {
	var kubeconfig, config, policy, output string
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
			if output != "text" && output != "json" {
				return fmt.Errorf("-o %q: use text or json", output)
			}
			scfg, err := schedulerConfig(config, policy)
			if err != nil {
				return err
			}
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			scheme, err := newScheme()
			if err != nil {
				return err
			}
			c, err := client.New(cfg, client.Options{Scheme: scheme})
			if err != nil {
				return err
			}
			e, err := k8s.Explain(cmd.Context(), c, scfg, args[0], args[1], time.Now())
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(e)
			}
			return e.WriteText(cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; empty: $KUBECONFIG or the in-cluster config")
	fs.StringVar(&config, "config", "", "scheduler configuration the cluster's scheduler runs; empty: --policy")
	fs.StringVar(&policy, "policy", "tessera", "built-in policy used when --config is empty")
	fs.StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}
