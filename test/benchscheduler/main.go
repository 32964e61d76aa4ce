package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	// The watched ceiling (-watched-ceiling): the ceiling's binds writing what
	// Tessera's binds write while a scheduler-like cache watches every pod.
	WatchedCeilingPodsPerS float64 `json:"watched_ceiling_pods_per_s,omitempty"`
	OfWatchedCeiling       float64 `json:"tessera_of_watched_ceiling,omitempty"`
	Pods                   int     `json:"pods"`
	Nodes                  int     `json:"nodes"`
	// Peak RSS (VmHWM) of each scheduler's process over the case, in MiB (Tessera's
	// only when it runs as its own process, -tessera).
	TesseraRSSMiB       float64 `json:"tessera_rss_mib,omitempty"`
	KubeSchedulerRSSMiB float64 `json:"kube_scheduler_rss_mib,omitempty"`
	// Churn cases (and dra5k's arrivals): creation-to-bind latency of the pods created
	// while the scheduler runs, and the churn's length and rate (pods created, and as
	// many deleted, per second).
	TesseraP50BindSeconds       float64 `json:"tessera_p50_bind_seconds,omitempty"`
	TesseraP99BindSeconds       float64 `json:"tessera_p99_bind_seconds,omitempty"`
	KubeSchedulerP50BindSeconds float64 `json:"kube_scheduler_p50_bind_seconds,omitempty"`
	KubeSchedulerP99BindSeconds float64 `json:"kube_scheduler_p99_bind_seconds,omitempty"`
	CeilingP50BindSeconds       float64 `json:"ceiling_p50_bind_seconds,omitempty"`
	CeilingP99BindSeconds       float64 `json:"ceiling_p99_bind_seconds,omitempty"`
	TesseraUnbound              int     `json:"tessera_unbound,omitempty"`
	KubeSchedulerUnbound        int     `json:"kube_scheduler_unbound,omitempty"`
	ChurnSeconds                float64 `json:"churn_seconds,omitempty"`
	ChurnPodsPerS               float64 `json:"churn_pods_per_s,omitempty"`
	// dra5k: Tessera's figures for the same pods asking the extended resource instead
	// of a claim, and its rate with claims over that rate.
	TesseraExtendedPodsPerS       float64 `json:"tessera_extended_pods_per_s,omitempty"`
	TesseraExtendedP50BindSeconds float64 `json:"tessera_extended_p50_bind_seconds,omitempty"`
	TesseraExtendedP99BindSeconds float64 `json:"tessera_extended_p99_bind_seconds,omitempty"`
	ClaimsOfExtended              float64 `json:"tessera_claims_of_extended,omitempty"`
	// dra5k: the ceiling of the same pods asking the extended resource, and the claims
	// ceiling over it: the most of its extended-resource rate a scheduler keeps with claims.
	CeilingExtendedPodsPerS       float64 `json:"ceiling_extended_pods_per_s,omitempty"`
	CeilingExtendedP50BindSeconds float64 `json:"ceiling_extended_p50_bind_seconds,omitempty"`
	CeilingExtendedP99BindSeconds float64 `json:"ceiling_extended_p99_bind_seconds,omitempty"`
	CeilingClaimsOfExtended       float64 `json:"ceiling_claims_of_extended,omitempty"`
	// dra5k: the arrivals after the burst, whose bind latencies are the p50 and p99:
	// pods created at this rate for this long while the scheduler runs.
	ArrivalSeconds  float64 `json:"arrival_seconds,omitempty"`
	ArrivalPodsPerS float64 `json:"arrival_pods_per_s,omitempty"`
	// LoadAverage is the machine's 1-minute load average when the case ended.
	LoadAverage float64 `json:"load_average_1m,omitempty"`
	// Rounds are each round's rates when a throughput case ran more than once
	// (-rounds); the case's rates are then the medians over the rounds.
	Rounds []Round `json:"rounds,omitempty"`
}

// Round is one round of a throughput case: every arm once, in the order Order.
type Round struct {
	Order                  []string `json:"order"`
	TesseraPodsPerS        float64  `json:"tessera_pods_per_s"`
	KubeSchedulerPodsPerS  float64  `json:"kube_scheduler_pods_per_s,omitempty"`
	CeilingPodsPerS        float64  `json:"ceiling_pods_per_s"`
	WatchedCeilingPodsPerS float64  `json:"watched_ceiling_pods_per_s,omitempty"`
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
	nodes := flag.Int("nodes", 1000, "nodes, 8 GPUs each, of the cases single and gang8")
	pods := flag.Int("pods", 7000, "one-GPU pods per case of single and gang8")
	cases := flag.String("cases", "single,gang8", "cases to run, in this order: single, gang8, single5k, churn5k, dra5k (a case that needs more nodes adds them; run the larger ones last)")
	bigNodes := flag.Int("big-nodes", 5000, "nodes of the cases single5k, churn5k and dra5k")
	bigPods := flag.Int("big-pods", 35000, "one-GPU pods of the case single5k")
	churnFill := flag.Float64("churn-fill", 0.7, "churn5k: share of the GPUs held by running pods")
	churnRate := flag.Float64("churn-rate", 100, "churn5k: pods created (and as many deleted) per second")
	churnFor := flag.Duration("churn-duration", 3*time.Minute, "churn5k: how long the churn lasts")
	draPods := flag.Int("dra-pods", 5000, "dra5k: pods of the burst, each with its own ResourceClaim of one GPU (on -big-nodes nodes)")
	draRate := flag.Float64("dra-rate", 20, "dra5k: pods created per second after the burst, whose bind latency is measured")
	draFor := flag.Duration("dra-duration", 15*time.Second, "dra5k: how long pods are created after the burst")
	tesseraBin := flag.String("tessera", "", "tessera binary, run as `tessera scheduler` in its own process (its peak RSS is reported); empty: in this process")
	out := flag.String("o", "out/bench-scheduler.json", "JSON report")
	kubeScheduler := flag.String("kube-scheduler", "", "kube-scheduler binary; empty: skip it")
	heapNodes := flag.Int("heap-nodes", 0, "nodes for the heap measurement (0: skip it)")
	heapPods := flag.Int("heap-pods", 0, "pods for the heap measurement")
	cpuProfile := flag.String("cpuprofile", "", "with -tessera empty: write the in-process scheduler's CPU profile of each measurement to <path>-<case>-tessera")
	timeout := flag.Duration("timeout", 5*time.Minute, "limit for one scheduler to bind every pod")
	rounds := flag.Int("rounds", 1, "single, gang8, single5k: rounds of every arm, each round starting with the next arm (the API server slows as etcd's history grows, which an arm that always runs first would gain from); rates are the medians")
	watched := flag.Bool("watched-ceiling", false, "single, gang8, single5k: also measure the watched ceiling, the ceiling's binds carrying the annotations Tessera's binds write while an informer on their connection watches every pod, as a scheduler's cache does")
	apiProfile := flag.Duration("apiserver-profile", 0, "profile the API server's CPU for this long from each measurement's first bind, into kube-apiserver-<namespace>.pprof next to the report (0: not)")
	tesseraFlags := flag.String("tessera-flags", "", "more flags for `tessera scheduler` run from -tessera, space-separated (say, --bind-workers=64)")
	flag.Parse()
	big := bigCases{nodes: *bigNodes, pods: *bigPods, fill: *churnFill, rate: *churnRate, dur: *churnFor,
		dra: draSizes{nodes: *bigNodes, pods: *draPods, rate: *draRate, dur: *draFor}}
	if *rounds < 1 {
		fmt.Fprintf(os.Stderr, "benchscheduler: -rounds %d: must be at least 1\n", *rounds)
		os.Exit(2)
	}
	if *draRate <= 0 {
		fmt.Fprintf(os.Stderr, "benchscheduler: -dra-rate %g: must be above 0 pods per second\n", *draRate)
		os.Exit(2)
	}
	if *apiProfile < 0 || *apiProfile%time.Second != 0 {
		fmt.Fprintf(os.Stderr, "benchscheduler: -apiserver-profile %s: use whole seconds (for example 3s), or 0 for none\n", *apiProfile)
		os.Exit(2)
	}
	if err := run(*nodes, *pods, *cases, *out, *kubeScheduler, tesseraRun{bin: *tesseraBin, flags: strings.Fields(*tesseraFlags), cpuProfile: *cpuProfile}, big, *heapNodes, *heapPods, *timeout, *rounds, *watched, *apiProfile); err != nil {
		fmt.Fprintln(os.Stderr, "benchscheduler:", err)
		os.Exit(1)
	}
}

// bigCases size single5k, churn5k and dra5k.
type bigCases struct {
	nodes, pods int
	fill, rate  float64
	dur         time.Duration
	dra         draSizes
}

func run(nodes, pods int, cases, out, kubeScheduler string, ts tesseraRun, big bigCases, heapNodes, heapPods int, timeout time.Duration, rounds int, watched bool, apiProfile time.Duration) error {
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
	b.ts, b.rounds, b.watched, b.apiServerProfile = ts, rounds, watched, apiProfile
	ctx := context.Background()
	var rep Report
	for _, name := range splitList(cases) {
		var c Case
		switch name {
		case "single", "gang8", "single5k":
			n, p, gang := nodes, pods, 1
			switch name {
			case "gang8":
				gang = 8
			case "single5k":
				n, p = big.nodes, big.pods
			}
			if c, err = b.throughput(ctx, name, n, p, gang, kubeScheduler); err != nil {
				return err
			}
		case "churn5k":
			if c, err = b.churnCase(ctx, name, big, kubeScheduler); err != nil {
				return err
			}
		case "dra5k":
			if c, err = b.draCase(ctx, name, big.dra, kubeScheduler); err != nil {
				return err
			}
		default:
			return fmt.Errorf("-cases: unknown case %q; known: single, gang8, single5k, churn5k, dra5k", name)
		}
		c.LoadAverage = loadAverage()
		rep.Cases = append(rep.Cases, c)
		// Write the report after every case, so that a long run that fails later keeps it.
		if err := writeReport(out, &rep); err != nil {
			return err
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
	return writeReport(out, &rep)
}

func writeReport(out string, rep *Report) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(data, '\n'), 0o644)
}

// loadAverage is the 1-minute load average (0 when unknown).
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	_, _ = fmt.Sscan(string(data), &l)
	return l
}

// throughput measures pods bound per second for pods pods (gangs of gang) on nodes
// nodes: the ceiling, Tessera and kube-scheduler (when bin is set) one after another,
// b.rounds times, each round starting one arm later than the one before.
func (b *bench) throughput(ctx context.Context, name string, nodes, pods, gang int, kubeScheduler string) (Case, error) {
	c := Case{Name: name, Pods: pods}
	if err := b.nodes(ctx, nodes); err != nil {
		return c, err
	}
	c.Nodes = len(b.nodeList)
	type arm struct {
		name string
		r    runner
		rate *float64
		rss  *float64
	}
	var rd Round
	arms := []arm{{"ceiling", b.ceiling(), &rd.CeilingPodsPerS, nil}, {"tessera", b.tessera(), &rd.TesseraPodsPerS, &c.TesseraRSSMiB}}
	if b.watched {
		arms = append(arms, arm{"watched", b.watchedCeiling(), &rd.WatchedCeilingPodsPerS, nil})
	}
	if kubeScheduler != "" {
		arms = append(arms, arm{"kube", b.kubeScheduler(kubeScheduler), &rd.KubeSchedulerPodsPerS, &c.KubeSchedulerRSSMiB})
	}
	for r := range b.rounds {
		rd = Round{}
		for i := range arms {
			a := arms[(r+i)%len(arms)]
			ns := name + "-" + a.name
			if b.rounds > 1 {
				ns += fmt.Sprintf("-%d", r+1)
			}
			b.rssMiB = 0
			rate, err := b.measure(ctx, ns, pods, gang, gpuExtended, a.r)
			if err != nil {
				return c, err
			}
			*a.rate = rate
			if a.rss != nil {
				*a.rss = max(*a.rss, b.rssMiB)
			}
			rd.Order = append(rd.Order, a.name)
		}
		c.Rounds = append(c.Rounds, rd)
	}
	median := func(f func(Round) float64) float64 {
		v := make([]float64, len(c.Rounds))
		for i, rd := range c.Rounds {
			v[i] = f(rd)
		}
		slices.Sort(v)
		return quantile(v, 0.5)
	}
	c.CeilingPodsPerS = median(func(r Round) float64 { return r.CeilingPodsPerS })
	c.TesseraPodsPerS = median(func(r Round) float64 { return r.TesseraPodsPerS })
	c.KubeSchedulerPodsPerS = median(func(r Round) float64 { return r.KubeSchedulerPodsPerS })
	c.WatchedCeilingPodsPerS = median(func(r Round) float64 { return r.WatchedCeilingPodsPerS })
	if c.WatchedCeilingPodsPerS > 0 {
		c.OfWatchedCeiling = c.TesseraPodsPerS / c.WatchedCeilingPodsPerS
		fmt.Printf("%-8s watched ceiling %7.0f pods/s   tessera/watched ceiling %.0f%%\n", name, c.WatchedCeilingPodsPerS, 100*c.OfWatchedCeiling)
	}
	if b.rounds == 1 {
		c.Rounds = nil
	}
	if c.KubeSchedulerPodsPerS > 0 {
		c.VsKubeScheduler = c.TesseraPodsPerS / c.KubeSchedulerPodsPerS
	}
	c.OfCeiling = c.TesseraPodsPerS / c.CeilingPodsPerS
	fmt.Printf("%-8s tessera %7.0f pods/s   kube-scheduler %7.0f pods/s   ceiling %7.0f pods/s   tessera/kube %.2fx   tessera/ceiling %.0f%%   RSS tessera %.0f MiB, kube-scheduler %.0f MiB\n",
		name, c.TesseraPodsPerS, c.KubeSchedulerPodsPerS, c.CeilingPodsPerS, c.VsKubeScheduler, 100*c.OfCeiling, c.TesseraRSSMiB, c.KubeSchedulerRSSMiB)
	return c, nil
}

// churnCase runs the churn for the ceiling, Tessera and kube-scheduler (when bin is
// set) one after another, each on empty nodes.
func (b *bench) churnCase(ctx context.Context, name string, big bigCases, kubeScheduler string) (Case, error) {
	c := Case{Name: name, ChurnSeconds: big.dur.Seconds(), ChurnPodsPerS: big.rate}
	if err := b.nodes(ctx, big.nodes); err != nil {
		return c, err
	}
	c.Nodes = len(b.nodeList)
	fill := int(float64(c.Nodes*8) * big.fill)
	c.Pods = fill
	ceil, err := b.churn(ctx, name+"-ceiling", b.ceilingWatch(false), fill, big.rate, big.dur)
	if err != nil {
		return c, err
	}
	c.CeilingPodsPerS, c.CeilingP50BindSeconds, c.CeilingP99BindSeconds = ceil.PodsPerS, ceil.P50, ceil.P99
	b.rssMiB = 0
	ts, err := b.churn(ctx, name+"-tessera", b.tessera(), fill, big.rate, big.dur)
	if err != nil {
		return c, err
	}
	c.TesseraPodsPerS, c.TesseraP50BindSeconds, c.TesseraP99BindSeconds, c.TesseraUnbound = ts.PodsPerS, ts.P50, ts.P99, ts.Unbound
	c.TesseraRSSMiB = b.rssMiB
	c.OfCeiling = c.TesseraPodsPerS / c.CeilingPodsPerS
	if kubeScheduler != "" {
		b.rssMiB = 0
		ks, err := b.churn(ctx, name+"-kube", b.kubeScheduler(kubeScheduler), fill, big.rate, big.dur)
		if err != nil {
			return c, err
		}
		c.KubeSchedulerPodsPerS, c.KubeSchedulerP50BindSeconds, c.KubeSchedulerP99BindSeconds, c.KubeSchedulerUnbound = ks.PodsPerS, ks.P50, ks.P99, ks.Unbound
		c.KubeSchedulerRSSMiB = b.rssMiB
		c.VsKubeScheduler = c.TesseraPodsPerS / c.KubeSchedulerPodsPerS
	}
	fmt.Printf("%-8s bind latency p50/p99: tessera %.3f/%.3f s, kube-scheduler %.3f/%.3f s, ceiling %.3f/%.3f s; bound/s: tessera %.1f, kube-scheduler %.1f, ceiling %.1f; RSS tessera %.0f MiB, kube-scheduler %.0f MiB\n",
		name, c.TesseraP50BindSeconds, c.TesseraP99BindSeconds, c.KubeSchedulerP50BindSeconds, c.KubeSchedulerP99BindSeconds,
		c.CeilingP50BindSeconds, c.CeilingP99BindSeconds, c.TesseraPodsPerS, c.KubeSchedulerPodsPerS, c.CeilingPodsPerS, c.TesseraRSSMiB, c.KubeSchedulerRSSMiB)
	return c, nil
}
