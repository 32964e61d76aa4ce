package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tessera-gpu/tessera/gitops/lint"
	"github.com/tessera-gpu/tessera/gitops/preview"
	"github.com/tessera-gpu/tessera/internal/cli"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/sim"
	"github.com/tessera-gpu/tessera/sim/report"
	"github.com/tessera-gpu/tessera/sim/trace"
)

func init() { register(newGitOpsCommand) }

func newGitOpsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gitops",
		Short: "Lint the GitOps repository of queues and policies",
	}
	unknownSubcommand(cmd)
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
file:line: message per finding. Reading is bounded (kustomization cycles and depth,
files outside their kustomization, file size, objects, YAML aliases); input beyond a
bound cannot be checked.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return cli.Usage(fmt.Errorf("-o %q: use text or json", output))
			}
			findings, err := lint.Lint(cmd.Context(), args[0], opts)
			if err != nil {
				return cli.Usage(err)
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
				return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("%d finding(s) in %s", len(findings), args[0])}
			}
			return nil
		},
	}
	l.Flags().Int64Var(&opts.ClusterGPUs, "cluster-gpus", 0, "GPUs of the cluster; the top-level queues' deserved GPUs must fit (0: not checked)")
	l.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.AddCommand(
		exitCodes(l, nil, "1 findings (printed), 2 input it cannot check (no kustomization, a kustomization cycle, a limit exceeded, bad flags)"),
		exitCodes(newPreviewCommand(), isPolicyError, "1 a side's admission policies do not compile or fail their tests (the webhook would reject them), 2 unusable input (bad flags, a directory kustomize cannot build, an unreadable or oversized file)"))
	return cmd
}

func newPreviewCommand() *cobra.Command {
	var base, head, manifests, profile, output, scenario string
	var kube kubeclient.Options
	var live, progress bool
	var seeds int
	cmd := &cobra.Command{
		Use:   "preview --base DIR --head DIR (--manifests CLUSTER.yaml | --from-cluster | --scenario NAME)",
		Short: "Show what a change to the queues and policies does before it merges",
		Long: `Lays the queues, admission policies, priority classes, namespaces and scale-down
policies of two versions
of a cluster's kustomization (--base, --head: for example the main branch and a pull
request's checkout) over the same cluster, a YAML dump (--manifests, what tessera
simulate --manifests reads) or the live objects (--from-cluster), passes each through
the admission policies, schedules the pending pods with the simulator, and prints the
difference per queue: GPUs held, pods running and pending, and the objects the
policies newly deny, no longer deny or rewrite. With --scenario, a built-in scenario's
job mix is replayed on a virtual clock under each version's queues instead (their GPU
figures scaled so the base's deserved shares add up to the scenario's cluster), and the
difference is the mean and p95 wait and the GPUs each queue holds, with preemptions and
starved jobs; a version's ScaleDownPolicy removes the scenario's idle nodes as the
autoscaler would (its settings on every node of the scenario), which adds the
GPU-node-hours paid, the nodes removed, the pods they evicted and the work lost.
Deterministic: the same inputs give the same output. -o markdown is ready
to post on the pull request. Progress goes to standard error, on a terminal or with
--progress; standard output holds the preview alone.`,
		Example: `  tessera gitops preview --base main/gitops/clusters/prod --head pr/gitops/clusters/prod --manifests prod-dump.yaml -o markdown`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if base == "" || head == "" {
				return fmt.Errorf("--base and --head name the two versions of the cluster's kustomization directory")
			}
			if output != "text" && output != "markdown" && output != "json" {
				return fmt.Errorf("-o %q: use text, markdown or json", output)
			}
			if n := count(manifests != "", live, scenario != ""); n != 1 {
				return fmt.Errorf("give the cluster as --manifests FILE, --from-cluster or --scenario NAME, one of them")
			}
			if cmd.Flags().Changed("seeds") && scenario == "" {
				return fmt.Errorf("--seeds applies to --scenario only")
			}
			if seeds < 1 || seeds > sim.MaxSeeds {
				return fmt.Errorf("--seeds %d: use 1 to %d", seeds, sim.MaxSeeds)
			}
			for _, f := range []string{"kubeconfig", "request-timeout"} {
				if cmd.Flags().Changed(f) && !live {
					return fmt.Errorf("--%s applies to --from-cluster only", f)
				}
			}
			if err := kube.Validate(); err != nil {
				return err
			}
			scfg, err := schedulerConfig("", profile)
			if err != nil {
				return err
			}
			b, err := preview.Load(base)
			if err != nil {
				return fmt.Errorf("--base: %w", err)
			}
			h, err := preview.Load(head)
			if err != nil {
				return fmt.Errorf("--head: %w", err)
			}
			var opts []preview.Option
			if progress || (!cmd.Flags().Changed("progress") && report.IsTerminal(cmd.ErrOrStderr())) {
				opts = append(opts, preview.WithProgress(cmd.ErrOrStderr()))
			}
			var result previewResult
			if scenario != "" {
				if result, err = preview.RunReplay(scenario, b, h, profile, &scfg, seeds, opts...); err != nil {
					return err
				}
			} else {
				load, _ := manifestsSource(cmd.Context(), nil, live, kube)
				if manifests != "" {
					load = func() (*trace.Manifests, error) { return preview.ReadCluster(manifests) }
				}
				cluster, err := load()
				if err != nil {
					return err
				}
				if result, err = preview.Run(cmd.Context(), cluster, b, h, admitManifests, profile, &scfg, sim.FirstSeed, opts...); err != nil {
					return err
				}
			}
			w := cmd.OutOrStdout()
			switch output {
			case "markdown":
				return result.WriteMarkdown(w)
			case "json":
				return writeJSON(w, result)
			}
			return result.WriteText(w)
		},
	}
	f := cmd.Flags()
	f.StringVar(&base, "base", "", "the cluster's kustomization directory before the change")
	f.StringVar(&head, "head", "", "the cluster's kustomization directory after the change")
	f.StringVar(&manifests, "manifests", "", "the cluster as YAML (kubectl get ... -o yaml)")
	f.BoolVar(&live, "from-cluster", false, "read the cluster's live objects (only reads)")
	f.StringVar(&kube.Kubeconfig, "kubeconfig", "", "--from-cluster: kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	kube.AddTimeoutFlag(f, "--from-cluster: ")
	f.StringVar(&scenario, "scenario", "", "replay this built-in scenario's job mix under each version's queues: "+strings.Join(trace.ScenarioNames(), ", "))
	f.IntVar(&seeds, "seeds", 1, "--scenario: runs per version, seeds 42, 43, ...")
	profileFlag(cmd, &profile, "tessera", "built-in scheduler profile: "+strings.Join(scheduler.ProfileNames(), ", "))
	f.StringVarP(&output, "output", "o", "text", "text, markdown or json")
	f.BoolVar(&progress, "progress", false, "report progress on standard error (default: when standard error is a terminal; --progress=false never)")
	return cmd
}

// previewResult is a preview of either kind, printable three ways.
type previewResult interface {
	WriteText(io.Writer) error
	WriteMarkdown(io.Writer) error
}

// count is how many of the conditions hold.
func count(conds ...bool) int {
	n := 0
	for _, c := range conds {
		if c {
			n++
		}
	}
	return n
}

// exitCodes makes cmd exit as lint, preview and convert do: 0 clean, 1 findings (the
// errors findings picks, or RunE's own exit code 1), 2 unusable input (bad flags or
// arguments and every other error); exits (the codes 1 and 2 in words) goes into its
// help.
func exitCodes(cmd *cobra.Command, findings func(error) bool, exits string) *cobra.Command {
	cmd.Long += "\n\nExit codes: 0 clean, " + exits + "."
	cli.UsageErrors(cmd)
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, a []string) error {
			err := run(c, a)
			var ec *cli.ExitError
			switch {
			case err == nil || errors.As(err, &ec):
				return err
			case findings != nil && findings(err):
				return &cli.ExitError{Code: cli.ExitFailure, Err: err}
			}
			return cli.Usage(err)
		}
	}
	return cmd
}

// isPolicyError picks a preview's broken admission policies.
func isPolicyError(err error) bool {
	var pe *preview.PolicyError
	return errors.As(err, &pe)
}

// unknownSubcommand makes a command that only groups subcommands refuse an unknown one
// (exit 2) instead of printing its help and exiting 0, which would let a CI script
// with a typo pass.
func unknownSubcommand(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 2 // as cobra's root command
		}
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return cli.Usage(errors.New(msg))
	}
	return cmd
}
