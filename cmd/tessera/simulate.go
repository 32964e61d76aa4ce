package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/internal/cli"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
	"github.com/tessera-gpu/tessera/internal/livecluster"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/sim"
	"github.com/tessera-gpu/tessera/sim/report"
	"github.com/tessera-gpu/tessera/sim/trace"
	"github.com/tessera-gpu/tessera/webhooks"
)

func init() { register(newSimulateCommand) }

func newSimulateCommand() *cobra.Command {
	var (
		o              sim.Options
		profiles       string
		format         string
		htmlPath       string
		configs        []string
		protectedShare float64
		manifests      []string
		admission      bool
		live           bool
		kube           kubeclient.Options
	)
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Replay a cluster trace through the scheduler and compare profiles",
		Long: `Runs the real scheduler core on a virtual clock over a cluster trace and compares
scheduler profiles (--profile).

  --mode fillup   the FGD paper's protocol: pods arrive until their GPU request reaches
                  --arrive x the cluster's GPUs and never leave; reports allocation and
                  fragmentation against arrived request, and unallocated GPUs at 100%.
  --mode replay   arrivals and completions on a virtual clock through queues, gangs,
                  preemption and backfill; reports allocation, useful utilisation, waits.

Inputs: a shipped openb trace (--trace default), your own node and pod lists in the
openb CSV format (--nodes, --pods), a built-in scenario (--scenario operator or diurnal), or your
cluster in YAML (--manifests): its objects pass the admission policies, then every
pending pod is placed or told why not.
--config runs a scheduler configuration file as one more profile, to preview a change.
--autoscale (replay) runs each replay also under Tessera's autoscaler and under a
Cluster-Autoscaler-like rule, removed nodes coming back after --boot-delay when jobs
wait, and reports GPU-node-hours and waits against the always-on cluster;
--rightsizing (replay) runs each replay as every GPU right-sizing arm, autoscaled, with
GPU memory and utilisation curves of real pods, and reports GPU-hours, out-of-memory
restarts, pressure evictions and idle GPU-hours returned (docs/simulator.md); --arms
picks arms and --every-autoscaler runs each scheduler under every autoscaler;
--scenario diurnal is a week of openb pods whose GPU demand swings between about 30%
of the cluster at night and 90% by day. --scenario-nodes, --scenario-load and
--scenario-hours vary a scenario: its nodes (the queues' shares and the arrival rates
scale with them, so the load on the cluster stays), a multiple of its arrival rates, and
the length of its arrival window.

Fill-up columns: "alloc% @N" is the share of cluster GPUs allocated when the arrived
GPU request reached N% of the cluster's GPUs; "unalloc% @100" is 100 minus alloc% @100
(lower is better); "frag% @90" is the fragmented GPUs (FGD's measure) at 90% arrived.
A point the run did not reach shows as –.
Replay columns: "wait" is arrival to start; a job that never started counts until the
end of the run (a censored wait). "starved" counts the jobs of the worst run that never
started or waited more than 12 hours. "util" is the GPU share doing useful work: held
by jobs that can make progress (a whole gang), a memory slice as its share of the GPU.
Waits and "JCT" (arrival to completion, waits and work lost to evictions included) pool
the jobs of all runs; "GPU-weighted wait" weighs each job's wait by the GPUs it asks for;
"waited >6h" and ">12h" count the jobs of the worst run, those still waiting included.

Profiles:
` + profileList() + `
Exit codes: 0 success, 1 the command started and failed (the live cluster of
--from-cluster did not answer), 2 unusable input (bad flags; a trace, node or pod
list, manifests file or directory, or --config that cannot be read or is refused, such
as a Job of negative parallelism or a Pod without containers; manifests whose
AdmissionPolicies do not compile; a --report that cannot be written).`,
		Example: `  tessera simulate --trace default --profile bestfit,fgd,tessera --seeds 3 --report report.html
  tessera simulate --scenario operator --profile kube-default,tessera
  tessera simulate --scenario diurnal --profile tessera --autoscale --seeds 5 --report autoscale.html
  tessera simulate --scenario operator --scenario-nodes 40 --scenario-load 1.5 --scenario-hours 12
  tessera simulate --nodes nodes.csv --pods pods.csv --config my-scheduler.yaml -o json
  tessera simulate --manifests my-cluster.yaml --profile tessera,kube-default
  tessera simulate --manifests nodes.yaml,queues.yaml --manifests jobs/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkSimulateFlags(cmd, &o, manifests, format); err != nil {
				return cli.Usage(err)
			}
			load, source := manifestsSource(cmd.Context(), manifests, live, kube)
			if profiles == "" {
				switch {
				case load != nil:
					profiles = defaultManifestsProfiles
				case o.Mode == sim.ModeReplay:
					profiles = defaultReplayProfiles
				default:
					profiles = defaultFillUpProfiles
				}
			}
			var err error
			if o.Profiles, o.Custom, err = simulateProfiles(profiles, configs); err != nil {
				return cli.Usage(err)
			}
			if load != nil {
				return simulateManifests(cmd, source, load, admission, o.Profiles, o.Custom, format)
			}
			var html *os.File
			if htmlPath != "" {
				// Open the report first: an unwritable path fails before the run, not after.
				if html, err = os.Create(htmlPath); err != nil {
					return cli.Usage(fmt.Errorf("--report: %w", err))
				}
				defer html.Close()
			}
			o.Progress, o.Warn = cmd.ErrOrStderr(), cmd.ErrOrStderr()
			results, err := sim.Run(o)
			if err != nil {
				if html != nil {
					html.Close()
					os.Remove(htmlPath)
				}
				return cli.Usage(err) // the input cannot be simulated
			}
			summaries := report.Summarize(results)
			out := cmd.OutOrStdout()
			switch format {
			case "json":
				err = report.WriteJSON(out, results, summaries)
			case "markdown":
				err = report.WriteMarkdown(out, results, summaries)
			default:
				err = report.WriteTable(out, results, summaries)
			}
			if err != nil || html == nil {
				return err
			}
			if err := report.WriteHTML(html, "Tessera simulation", results, summaries); err != nil {
				return fmt.Errorf("--report: %w", err)
			}
			if err := html.Close(); err != nil {
				return fmt.Errorf("--report: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "report written to %s\n", htmlPath)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Trace, "trace", "", "openb pod list, or several separated by commas (run one after the other; fill-up adds a table across them): "+strings.Join(sim.OpenbVariants(), ", "))
	f.StringVar(&o.NodesFile, "nodes", "", "node list CSV (openb format: sn,cpu_milli,memory_mib,gpu,model)")
	f.StringVar(&o.PodsFile, "pods", "", "pod list CSV (openb format)")
	f.StringVar(&o.Scenario, "scenario", "", "built-in scenario: "+strings.Join(trace.ScenarioNames(), ", "))
	f.IntVar(&o.Variant.Nodes, "scenario-nodes", 0, fmt.Sprintf("--scenario: nodes of the cluster (1 to %d; default: the scenario's, operator 10, diurnal 8); the queues' shares and the arrival rates scale with them", trace.MaxScenarioNodes))
	f.Float64Var(&o.Variant.Load, "scenario-load", 1, fmt.Sprintf("--scenario: multiple of the scenario's arrival rates, and of operator's backlog at 0 (above 0, at most %d)", trace.MaxScenarioLoad))
	f.Float64Var(&o.Variant.Hours, "scenario-hours", 0, fmt.Sprintf("--scenario: length of the arrival window in hours (above 0, at most %d; default: the scenario's, operator 24, diurnal 168)", trace.MaxScenarioHours))
	f.StringSliceVar(&manifests, "manifests", nil, "YAML of Nodes, Namespaces, Pods, Jobs, Queues, PodGroups and AdmissionPolicies (and Volcano's, converted): show where each pending pod would go, or why not; several files or directories read as one cluster: repeat the flag or separate them with commas")
	f.BoolVar(&live, "from-cluster", false, "read the live objects of the cluster in --kubeconfig (the kinds --manifests reads) and show where each pending pod would go; only reads")
	f.StringVar(&kube.Kubeconfig, "kubeconfig", "", "--from-cluster: kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	kube.AddTimeoutFlag(f, "--from-cluster: ")
	f.BoolVar(&admission, "admission", true, "manifests: pass Queues, PodGroups, Jobs and unbound Pods through the admission policies (the defaults plus the manifests' AdmissionPolicies) first, as the webhooks would")
	f.StringVar(&o.Mode, "mode", "", "fillup or replay (default: fillup for --trace and --pods, replay for --scenario)")
	f.Float64Var(&o.Arrive, "arrive", 1.3, fmt.Sprintf("fill-up: GPU request to arrive, as a multiple of cluster GPUs (0 to %d)", trace.MaxArrive))
	profileFlag(cmd, &profiles, "", "comma-separated scheduler profiles: "+strings.Join(scheduler.ProfileNames(), ", ")+
		" (default: "+defaultFillUpProfiles+" in fill-up, "+defaultReplayProfiles+" in replay, "+defaultManifestsProfiles+" for --manifests)")
	f.IntVar(&o.Seeds, "seeds", 1, fmt.Sprintf("runs per profile, with seeds --first-seed, --first-seed + 1, ... (1 to %d)", sim.MaxSeeds))
	f.Int64Var(&o.FirstSeed, "first-seed", sim.FirstSeed, "seed of the first run, to check figures on seeds other than the published ones (1 or more)")
	f.StringVarP(&format, "output", "o", "table", "table, markdown (the same tables for a README or a pull request) or json")
	cli.DeprecatedAlias(cmd, "output", "format")
	f.StringVar(&htmlPath, "report", "", "write a self-contained HTML report with charts to this file")
	f.BoolVar(&o.Autoscale, "autoscale", false, "replay: run each replay also under the autoscalers its scheduler is paired with (kube-default: ca; volcano: ca, karpenter; tessera: tessera) and report GPU-node-hours saved, lost work and waits against always-on, and the ceiling")
	f.BoolVar(&o.RightSizing, "rightsizing", false, "replay: run each replay as every GPU right-sizing arm (whole-GPU requests, user-chosen slices, Tessera right-sized, a request and a limit with GPU-memory pressure evictions, right-sized with idle reclaim, each workload's peak known, and each run's peak known), each with jobs carrying GPU memory and utilisation curves of the genai2026 pods, autoscaled; report GPU-hours, OOM restarts, pressure evictions and idle GPU-hours returned")
	f.StringSliceVar(&o.Arms, "arms", nil, "with --rightsizing: the right-sizing arms to run, comma-separated (default all: "+strings.Join(sim.RightSizingArms, ", ")+"); profiles that cannot share GPUs (volcano, volcano-capacity, kube-default) run only "+strings.Join(sim.WholeGPUArms, ", "))
	f.BoolVar(&o.EveryAutoscaler, "every-autoscaler", false, "with --autoscale or --rightsizing: run each profile under every autoscaler ("+strings.Join(sim.Autoscalers, ", ")+"), not only those it is paired with, to tell the autoscaler's part from the scheduler's")
	f.Duration("idle-for", time.Duration(sim.DefaultIdleRule.IdleFor)*time.Second, "with --rightsizing: how long a job's GPUs stay at or below 1% before its owner is told (a Queue's spec.idleReclaim.idleFor); idle GPU-hours count stretches longer than this")
	f.Duration("idle-grace", time.Duration(sim.DefaultIdleRule.Grace)*time.Second, "with --rightsizing: how long after the notice an idle job is suspended (a Queue's spec.idleReclaim.gracePeriod)")
	f.DurationVar(&o.BootDelay, "boot-delay", sim.DefaultBootDelay, "with --autoscale: how long a GPU node added back takes before pods can use it")
	f.String("scale-down-policy", "", "with --autoscale or --rightsizing: a file holding the ScaleDownPolicy Tessera's autoscaler plans with (idleAfter, cooldown, maxParallel, underusedGPUPercent, ...; its nodeSelector is ignored); empty: the policy's defaults")
	f.Float64("underused-share", autoscale.DefaultUnderusedGPUPercent/100.0, "with --autoscale: Tessera's autoscaler also removes nodes whose allocated GPU share stayed at or below this (0 to 1) when the scheduler places their pods elsewhere; 0 removes empty nodes only (a ScaleDownPolicy's spec.underusedGPUPercent / 100; the default is the policy's)")
	f.Float64Var(&protectedShare, "non-evictable-share", -1, "replay: instead of the scenario's rule (jobs without checkpoints are protected from eviction), protect a random share of the jobs (0 to 1) and let the others checkpoint every 30 minutes; -1 keeps the rule")
	f.StringArrayVar(&configs, "config", nil, "scheduler configuration file to run besides the profiles, under its file name without the extension (repeatable)")
	return cmd
}

// Default profiles per input.
const (
	defaultFillUpProfiles    = "bestfit,fgd,tessera"
	defaultReplayProfiles    = "kube-default,volcano,volcano-seed,volcano-capacity,tessera"
	defaultManifestsProfiles = "tessera"
)

// checkSimulateFlags rejects conflicting and out-of-range flags, naming them, and
// sets the mode's default.
func checkSimulateFlags(cmd *cobra.Command, o *sim.Options, manifests []string, format string) error {
	set := cmd.Flags().Changed
	var inputs []string
	for _, f := range []string{"trace", "nodes", "scenario", "manifests", "from-cluster"} {
		if set(f) {
			inputs = append(inputs, "--"+f)
		}
	}
	if len(inputs) > 1 {
		return fmt.Errorf("%s: give one input: --trace, --nodes with --pods, --scenario, --manifests or --from-cluster", strings.Join(inputs, " and "))
	}
	if (o.NodesFile == "") != (o.PodsFile == "") {
		return fmt.Errorf("--nodes and --pods go together")
	}
	if format != "table" && format != "markdown" && format != "json" {
		return fmt.Errorf("-o %q: use table, markdown or json", format)
	}
	for _, f := range []string{"kubeconfig", "request-timeout"} {
		if set(f) && !set("from-cluster") {
			return fmt.Errorf("--%s applies to --from-cluster only", f)
		}
	}
	if d, _ := cmd.Flags().GetDuration("request-timeout"); d < 0 {
		return fmt.Errorf("--request-timeout %s: must not be negative (for example 30s; 0 waits forever)", d)
	}
	if len(manifests) > 0 || set("from-cluster") {
		for _, f := range []string{"mode", "arrive", "seeds", "first-seed", "report", "autoscale", "rightsizing", "arms", "every-autoscaler", "idle-for", "idle-grace", "boot-delay", "scale-down-policy", "underused-share", "non-evictable-share", "scenario-nodes", "scenario-load", "scenario-hours"} {
			if set(f) {
				return fmt.Errorf("--%s does not apply to --manifests or --from-cluster, which place the pending pods once", f)
			}
		}
		if format == "markdown" {
			return fmt.Errorf("-o markdown applies to --trace, --nodes with --pods and --scenario; --manifests and --from-cluster print table or json")
		}
		return nil
	}
	if set("admission") {
		return fmt.Errorf("--admission applies to --manifests and --from-cluster only")
	}
	if err := checkScenarioVariant(set, o.Variant); err != nil {
		return err
	}
	if err := sim.CheckSeeds(o.FirstSeed, o.Seeds); err != nil {
		return err
	}
	if o.Mode == "" {
		o.Mode = sim.ModeFillUp
		if o.Scenario != "" {
			o.Mode = sim.ModeReplay
		}
	}
	underused, _ := cmd.Flags().GetFloat64("underused-share")
	idleFor, _ := cmd.Flags().GetDuration("idle-for")
	idleGrace, _ := cmd.Flags().GetDuration("idle-grace")
	switch {
	case o.Mode != sim.ModeFillUp && o.Mode != sim.ModeReplay:
		return fmt.Errorf("--mode %q: use fillup or replay", o.Mode)
	case o.Mode == sim.ModeReplay && set("arrive"):
		return fmt.Errorf("--arrive applies to --mode fillup only")
	case o.Mode != sim.ModeReplay && o.RightSizing:
		return fmt.Errorf("--rightsizing applies to --mode replay only: fill-up pods never end, so no run is ever measured")
	case o.Mode != sim.ModeReplay && o.Autoscale:
		return fmt.Errorf("--autoscale applies to --mode replay only: fill-up pods never leave, so no node ever empties")
	case set("arms") && !o.RightSizing:
		return fmt.Errorf("--arms applies with --rightsizing only")
	case o.EveryAutoscaler && !o.Autoscale && !o.RightSizing:
		return fmt.Errorf("--every-autoscaler applies with --autoscale or --rightsizing only")
	case (set("idle-for") || set("idle-grace")) && !o.RightSizing:
		return fmt.Errorf("--idle-for and --idle-grace apply with --rightsizing only")
	case idleFor < time.Minute || idleGrace < 0:
		return fmt.Errorf("--idle-for %s, --idle-grace %s: idle-for must be at least 1m and idle-grace not negative (for example --idle-for 1h --idle-grace 30m)", idleFor, idleGrace)
	case set("boot-delay") && !o.Autoscale && !o.RightSizing:
		return fmt.Errorf("--boot-delay applies with --autoscale only")
	case o.BootDelay < 0:
		return fmt.Errorf("--boot-delay %s: must not be negative (for example 5m)", o.BootDelay)
	case set("underused-share") && !o.Autoscale:
		return fmt.Errorf("--underused-share applies with --autoscale only")
	case set("scale-down-policy") && !o.Autoscale && !o.RightSizing:
		return fmt.Errorf("--scale-down-policy applies with --autoscale or --rightsizing only")
	case !(underused >= 0 && underused <= 1):
		return fmt.Errorf("--underused-share %g: must be a share between 0 and 1 (for example 0.5)", underused)
	case set("non-evictable-share") && o.Mode != sim.ModeReplay:
		return fmt.Errorf("--non-evictable-share applies to --mode replay only")
	}
	if set("underused-share") {
		o.UnderusedShare = &underused
	}
	if path, _ := cmd.Flags().GetString("scale-down-policy"); path != "" {
		pol, err := readScaleDownPolicy(path)
		if err != nil {
			return err
		}
		o.ScaleDownPolicy = pol
	}
	o.IdleReclaim = sim.IdleRule{Threshold: sim.DefaultIdleRule.Threshold, IdleFor: int64(idleFor / time.Second), Grace: int64(idleGrace / time.Second)}
	if set("non-evictable-share") {
		share, _ := cmd.Flags().GetFloat64("non-evictable-share")
		switch {
		case share == -1:
		case share >= 0 && share <= 1:
			o.ProtectedShare = &share
		default:
			return fmt.Errorf("--non-evictable-share %g: must be a share between 0 and 1 (for example 0.33), or -1 for the scenario's rule", share)
		}
	}
	return nil
}

// checkScenarioVariant rejects the --scenario-* flags without --scenario, and values
// out of bounds.
func checkScenarioVariant(set func(string) bool, v trace.Variant) error {
	for _, f := range []string{"scenario-nodes", "scenario-load", "scenario-hours"} {
		if set(f) && !set("scenario") {
			return fmt.Errorf("--%s applies to --scenario only (%s)", f, strings.Join(trace.ScenarioNames(), ", "))
		}
	}
	switch {
	case set("scenario-nodes") && (v.Nodes < 1 || v.Nodes > trace.MaxScenarioNodes):
		return fmt.Errorf("--scenario-nodes %d: must be a number of nodes from 1 to %d (for example 5000)", v.Nodes, trace.MaxScenarioNodes)
	case !(v.Load > 0 && v.Load <= trace.MaxScenarioLoad):
		return fmt.Errorf("--scenario-load %g: must be a multiple of the arrival rates above 0 and at most %d (for example 2; 1 keeps the scenario's)", v.Load, trace.MaxScenarioLoad)
	case set("scenario-hours") && !(v.Hours > 0 && v.Hours <= trace.MaxScenarioHours && math.Round(v.Hours*3600) >= 1):
		return fmt.Errorf("--scenario-hours %g: must be an arrival window above 0 hours (at least a second) and at most %d, 366 days (for example 48)", v.Hours, trace.MaxScenarioHours)
	}
	return nil
}

// simulateProfiles reads --profile (or the input's default) and the --config files, and
// rejects a name given twice: two runs under one name would be averaged into one row.
// A configuration runs under its file name without the extension.
func simulateProfiles(profiles string, configs []string) ([]string, map[string]scheduler.Config, error) {
	var names []string
	seen := map[string]string{}
	for _, p := range strings.Split(profiles, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if _, err := scheduler.Profile(p); err != nil {
			return nil, nil, fmt.Errorf("--profile: %w", err)
		}
		if _, dup := seen[p]; dup {
			return nil, nil, fmt.Errorf("--profile: %s is named twice; each profile runs once per seed", p)
		}
		seen[p] = "--profile"
		names = append(names, p)
	}
	custom := map[string]scheduler.Config{}
	for _, path := range configs {
		name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		if _, err := scheduler.Profile(name); err == nil {
			return nil, nil, fmt.Errorf("--config %s: runs as %q, the name of a built-in profile; rename the file", path, name)
		}
		if by, dup := seen[name]; dup {
			return nil, nil, fmt.Errorf("--config %s: runs as %q, a name %s already gives; rename the file", path, name, by)
		}
		cfg, err := scheduler.LoadConfig(path)
		if err != nil {
			return nil, nil, err
		}
		seen[name] = "--config " + path
		custom[name] = cfg
	}
	return names, custom, nil
}

// manifestsSource returns how to read the cluster description (YAML files, or the
// live cluster of kube) and its name in messages; nil when the input is neither. Files
// that cannot be read or are refused are unusable input.
func manifestsSource(ctx context.Context, paths []string, live bool, kube kubeclient.Options) (func() (*trace.Manifests, error), string) {
	switch {
	case len(paths) > 0:
		return func() (*trace.Manifests, error) {
			m, err := trace.ReadManifests(paths...)
			return m, cli.Usage(err)
		}, strings.Join(paths, ", ")
	case live:
		return func() (*trace.Manifests, error) {
			c, err := kubeClient(kube)
			if err != nil {
				return nil, err
			}
			return livecluster.Read(ctx, c)
		}, "cluster"
	}
	return nil, ""
}

// simulateManifests schedules the pending pods of a cluster description (source names
// it) with each profile and --config configuration and prints the placements and the
// reasons of pods left pending; with admission, the objects first pass the admission
// policies as the webhooks would.
func simulateManifests(cmd *cobra.Command, path string, load func() (*trace.Manifests, error), admission bool, profiles []string, custom map[string]scheduler.Config, format string) error {
	m, err := load()
	if err != nil {
		return err
	}
	var admitted *sim.AdmissionResult
	if admission {
		var res sim.AdmissionResult
		if m, res, err = admitManifests(cmd.Context(), m); err != nil {
			return cli.Usage(fmt.Errorf("%s: %w", path, err)) // its AdmissionPolicies do not compile
		}
		admitted = &res
	}
	type run struct {
		Policy string              `json:"policy"`
		Result sim.ManifestsResult `json:"result"`
	}
	var runs []run
	for _, p := range profiles {
		r, err := sim.RunManifests(m, p, nil, sim.FirstSeed)
		if err != nil {
			return err
		}
		runs = append(runs, run{p, r})
	}
	for name, cfg := range custom {
		r, err := sim.RunManifests(m, name, &cfg, sim.FirstSeed)
		if err != nil {
			return err
		}
		runs = append(runs, run{name, r})
	}
	out := cmd.OutOrStdout()
	if format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"manifests": path, "admission": admitted, "runs": runs})
	}
	if admitted != nil {
		if err := sim.WriteAdmissionResult(out, *admitted); err != nil {
			return err
		}
	}
	for _, r := range runs {
		fmt.Fprintf(out, "%s — %s\n", path, r.Policy)
		if err := sim.WriteManifestsResult(out, r.Result); err != nil {
			return err
		}
		fmt.Fprintln(out)
	}
	return nil
}

// admitManifests passes the manifests through Tessera's admission policies (the
// defaults plus the manifests' AdmissionPolicies) on the cluster they describe: its
// queues, its nodes' GPUs, its namespaces and Tessera's priority classes.
func admitManifests(ctx context.Context, m *trace.Manifests) (*trace.Manifests, sim.AdmissionResult, error) {
	classes := slices.Clone(m.PriorityClasses) // the manifests' own, then the built-in ones they do not redefine
	for name, value := range sim.ManifestPriorityClasses {
		if !slices.ContainsFunc(classes, func(pc schedulingv1.PriorityClass) bool { return pc.Name == name }) {
			classes = append(classes, schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value})
		}
	}
	namespaces := make([]*webhooks.Namespace, len(m.Namespaces))
	for i, ns := range m.Namespaces {
		namespaces[i] = &webhooks.Namespace{Name: ns.Name, Labels: ns.Labels, Annotations: ns.Annotations}
	}
	cluster, err := webhooks.NewStaticCluster(m.Queues, sim.ManifestGPUNodes(m), classes, namespaces...)
	if err != nil {
		return nil, sim.AdmissionResult{}, err
	}
	local, err := webhooks.NewLocal(ctx, m.AdmissionPolicies, cluster)
	if err != nil {
		return nil, sim.AdmissionResult{}, err
	}
	admitted, res, err := sim.AdmitManifests(ctx, m, local)
	res.Warnings = append(slices.Clone(local.Warnings), res.Warnings...)
	return admitted, res, err
}

// profileList is one line per built-in profile: its name and what it is.
func profileList() string {
	var b strings.Builder
	for _, name := range scheduler.ProfileNames() {
		fmt.Fprintf(&b, "  %-17s %s\n", name, scheduler.ProfileDescription(name))
	}
	return b.String()
}

// readScaleDownPolicy reads the one ScaleDownPolicy of a file, defaulted and validated
// as the API server would.
func readScaleDownPolicy(path string) (*tesserav1.ScaleDownPolicy, error) {
	m, err := trace.ReadManifests(path)
	if err != nil {
		return nil, fmt.Errorf("--scale-down-policy: %w", err)
	}
	if n := len(m.ScaleDownPolicies); n != 1 {
		return nil, fmt.Errorf("--scale-down-policy %s: holds %d ScaleDownPolicies; give a file with exactly one (apiVersion tessera.dev/v1alpha1, kind ScaleDownPolicy)", path, n)
	}
	pol := m.ScaleDownPolicies[0]
	if _, err := autoscale.PolicyFrom(&pol); err != nil {
		return nil, fmt.Errorf("--scale-down-policy %s: %w", path, err)
	}
	pol.Spec.NodeSelector = nil
	return &pol, nil
}
