package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-gpu/tessera/autoscale"
)

func init() { register(newAutoscalerCommand) }

func newAutoscalerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "autoscaler",
		Short: "Cordon, drain and remove long-idle GPU nodes through Cluster API",
		Long: `The scale-down controller is not implemented yet: running it exits with status 2.
"tessera autoscaler plan" already says, for every GPU node, whether it would be removed
and why or why not.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return &exitCodeError{code: 2, err: fmt.Errorf("autoscaler: the controller is not implemented yet; tessera autoscaler plan reports the candidates")}
		},
	}
	cmd.AddCommand(newAutoscalerPlanCommand())
	return cmd
}

func newAutoscalerPlanCommand() *cobra.Command {
	var kubeconfig, config, policy, output string
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Print every GPU node, whether it is a scale-down candidate, and why or why not",
		Long: `Read the live cluster (kubeconfig) and plan once for every ScaleDownPolicy: each GPU
node the policy selects, whether it is a candidate (Empty or Underused), and otherwise the
rule that keeps it. A node counts as idle from its GPUNode's lastActiveTime. Changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, scfg, err := liveClient(kubeconfig, config, policy, output)
			if err != nil {
				return err
			}
			plans, err := autoscale.PlanCluster(cmd.Context(), c, scfg, time.Now())
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), plans)
			}
			if len(plans) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no ScaleDownPolicy: nothing is scaled down")
			}
			for _, p := range plans {
				if err := p.WriteText(cmd.OutOrStdout()); err != nil {
					return err
				}
			}
			return nil
		},
	}
	liveFlags(cmd, "kubeconfig file of the workload cluster; empty: $KUBECONFIG or the in-cluster config", &kubeconfig, &config, &policy, &output)
	return cmd
}
