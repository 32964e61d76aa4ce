package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tessera-gpu/tessera/gitops/lint"
)

func init() { register(newGitOpsCommand) }

func newGitOpsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gitops",
		Short: "Lint the GitOps repository of queues and policies",
	}
	var opts lint.Options
	var output string
	l := &cobra.Command{
		Use:   "lint DIR",
		Short: "Check a repository of Tessera configuration before it merges",
		Long: `Check every kustomization under DIR that no other includes: it builds, every custom
resource passes its CRD's schema and CEL rules (offline, the API server's own checks),
every AdmissionPolicy compiles and passes its tests, and the objects agree with each
other (referenced queues and priority classes exist, deserved <= capability, queue
parents exist and form no cycle, the deserved GPUs fit --cluster-gpus). Prints
file:line: message per finding; exits 1 on findings, 2 on input it cannot check.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return &exitCodeError{code: 2, err: fmt.Errorf("-o %q: use text or json", output)}
			}
			findings, err := lint.Lint(cmd.Context(), args[0], opts)
			if err != nil {
				return &exitCodeError{code: 2, err: err}
			}
			w := cmd.OutOrStdout()
			if output == "json" {
				if findings == nil {
					findings = []lint.Finding{}
				}
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"findings": findings}); err != nil {
					return err
				}
			} else {
				for _, f := range findings {
					fmt.Fprintln(w, f.String())
				}
			}
			if len(findings) > 0 {
				return &exitCodeError{code: 1, err: fmt.Errorf("%d finding(s) in %s", len(findings), args[0])}
			}
			return nil
		},
	}
	l.Flags().Int64Var(&opts.ClusterGPUs, "cluster-gpus", 0, "GPUs of the cluster; the top-level queues' deserved GPUs must fit (0: not checked)")
	l.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.AddCommand(l)
	return cmd
}
