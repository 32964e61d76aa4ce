package docs

// One figure per metric: each measured figure the README and docs/ quote comes from one
// place, the table of the run that measured it (docs/design.md for `make
// bench-scheduler`, the tables `make figures` writes into docs/simulator.md, the build
// scripts for first-build times), and every other place that quotes it must give the
// same value. A rerun that changes the source fails here until every quote follows.

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// figure is one metric: a pattern of its source and of each place that quotes it.
// In a pattern a figure (digits, with , . x or %, or a duration such as 5m40s) stands
// as {} in the source's, as {N} in a quote's, which must then be the source's Nth
// figure; the rest is literal text, white space folded.
type figure struct {
	name   string
	source place
	quotes []place
}

type place struct{ file, pattern string }

var figures = []figure{
	{
		name:   "pods bound per second at 5,000 nodes, median of three rounds, and its share of the ceiling",
		source: place{"docs/design.md", "| single5k: 5,000 nodes, 35,000 one-GPU pods, three rounds | {} pods/s, RSS {} MiB | | {} pods/s | {} pods/s | | {} (rounds"},
		quotes: []place{
			{"README.md", "| {1} (median of 3 rounds, {5} of the API server's ceiling)"},
			{"docs/operating.md", "5,000 nodes, 35,000 pods: {1} pods/s, the median of three rounds: {5} of the bind ceiling"},
			{"docs/comparison.md", "5,000 nodes, 35,000 one-GPU pods, {1} pods/s bound by Tessera, the median of three rounds"},
		},
	},
	{
		name:   "Tessera against kube-scheduler at 5,000 nodes, and their memory, in the round with every arm",
		source: place{"docs/design.md", "| single5k, one round with kube-scheduler | {} pods/s, RSS {} MiB | {} pods/s, RSS {} MiB | {} pods/s (measured first) | {} pods/s | {} |"},
		quotes: []place{
			{"README.md", "{7} kube-scheduler in a run of every arm"},
			{"README.md", "| scheduler memory at 5,000 nodes | RSS {2} MiB (kube-scheduler {4} MiB, same run)"},
			{"docs/operating.md", "In one round with every arm, {7} kube-scheduler at an RSS of {2} MiB against its {4} MiB"},
			{"docs/comparison.md", "in one round with every arm, {7} kube-scheduler."},
			{"docs/design.md", "Peak RSS is below kube-scheduler's at 5,000 nodes ({2} against {4} MiB in single5k's round with every arm,"},
		},
	},
	{
		name:   "bind latency and memory under churn at 5,000 nodes",
		source: place{"docs/design.md", "| bind latency p50 {} s, p99 {} s; {} bound/s; RSS {} MiB | p50 {} s, p99 {} s; {} bound/s; RSS {} MiB |"},
		quotes: []place{
			{"README.md", "| p50 {1} s, p99 {2} s (kube-scheduler {5} s / {6} s)"},
			{"docs/operating.md", "bind latency p50 {1} s, p99 {2} s (kube-scheduler {5} s / {6} s in the same run), RSS {4} MiB (kube-scheduler {8} MiB)"},
			{"docs/design.md", "{4} against {8} MiB under churn)"},
		},
	},
	{
		name:   "pods bound per second at 1,000 nodes, single pods",
		source: place{"docs/design.md", "| single: 1,000 nodes x 8 GPUs, 7,000 one-GPU pods | {} pods/s, RSS {} MiB | {} pods/s, RSS {} MiB | {} pods/s | {} pods/s | {} | {} (rounds"},
		quotes: []place{{"docs/operating.md", "1,000 nodes x 8 GPUs: {1} pods/s for single pods"}},
	},
	{
		name:   "pods bound per second at 1,000 nodes, gangs of 8",
		source: place{"docs/design.md", "| gang8: the same pods in gangs of 8 | {} pods/s, RSS {} MiB | {} pods/s, RSS {} MiB | {} pods/s | {} pods/s | {} | {} (rounds"},
		quotes: []place{{"docs/operating.md", "and {1} pods/s for gangs of 8"}},
	},
	{
		name:   "an hour of the diurnal scenario replayed at 5,000 nodes",
		source: place{"docs/simulator.md", "--scenario-hours 1 --profile tessera`, {} jobs, seed 42) replays in {} s"},
		quotes: []place{{"README.md", "| {1} jobs in {2} s on one core"}},
	},
	{
		name:   "a week of diurnal demand, volcano with ca: GPU-node-hours saved net of lost work, and the mean wait",
		source: place{"docs/simulator.md", "| volcano | ca | 3 | {} | {} | {} | {} | {} | {} ({} / {}) | {} | {} | {} |"},
		quotes: []place{{"docs/comparison.md", "| `volcano` (as it ships, whole GPUs) | Cluster Autoscaler | {3} | {9} |"}},
	},
	{
		name:   "a week of diurnal demand, volcano with karpenter: GPU-node-hours saved net of lost work, and the mean wait",
		source: place{"docs/simulator.md", "| volcano | karpenter | 3 | {} | {} | {} | {} | {} | {} ({} / {}) | {} | {} | {} |"},
		quotes: []place{{"docs/comparison.md", "| `volcano` | Karpenter | {3} | {9} |"}},
	},
	{
		name:   "a week of diurnal demand, volcano-seed with ca: GPU-node-hours saved net of lost work, and the mean wait",
		source: place{"docs/simulator.md", "| volcano-seed | ca | 3 | {} | {} | {} | {} | {} | {} ({} / {}) | {} | {} | {} |"},
		quotes: []place{{"docs/comparison.md", "| `volcano-seed` (binpack on GPUs, HAMi-style GPU-memory slices) | Cluster Autoscaler | {3} | {9} |"}},
	},
	{
		name:   "a week of diurnal demand, volcano-seed with karpenter: GPU-node-hours saved net of lost work, and the mean wait",
		source: place{"docs/simulator.md", "| volcano-seed | karpenter | 3 | {} | {} | {} | {} | {} | {} ({} / {}) | {} | {} | {} |"},
		quotes: []place{{"docs/comparison.md", "| `volcano-seed` | Karpenter | {3} | {9} |"}},
	},
	{
		name:   "a week of diurnal demand, tessera with tessera: GPU-node-hours saved net of lost work, and the mean wait",
		source: place{"docs/simulator.md", "| tessera | tessera | 3 | {} | {} | {} | {} | {} | {} ({} / {}) | {} | {} | {} |"},
		quotes: []place{{"docs/comparison.md", "| `tessera` | Tessera's own | {3} | {9} |"}},
	},
	{
		name:   "first build of kube-apiserver and etcd",
		source: place{"hack/k8s-binaries.sh", "# The first build takes about {} minutes on 2 cores"},
		quotes: []place{
			{"README.md", "(about {1} minutes on an idle 2-core machine)"},
			{"docs/getting-started.md", "kube-apiserver and etcd, about {1} minutes on 2 cores"},
		},
	},
	{
		name:   "first build of the end-to-end cluster's other components",
		source: place{"hack/e2e-binaries.sh", "# When everything is cached it prints and returns at once. The first build takes about {} minutes # on 2 cores"},
		quotes: []place{
			{"Makefile", "module proxy, cached in ~/.cache/tessera/e2e; about {1} minutes on 2 cores the first time"},
			{"docs/cluster.md", "(about {1} minutes the first time on 2 cores"},
			{"docs/getting-started.md", "then the cluster's other components, about {1} more"},
		},
	},
}

var figureRE = `([0-9][0-9.,]*(?:[x%]|[hms](?:[0-9]+[hms])*)?)`

// compile turns a pattern into a regexp over white-space-folded text, and returns the
// numbers of its {N} placeholders in order.
func compile(pattern string) (*regexp.Regexp, []int) {
	placeholder := regexp.MustCompile(`\{(\d*)\}`)
	pattern = strings.Join(strings.Fields(pattern), " ")
	var (
		b    strings.Builder
		refs []int
		last int
	)
	for _, m := range placeholder.FindAllStringSubmatchIndex(pattern, -1) {
		b.WriteString(regexp.QuoteMeta(pattern[last:m[0]]))
		b.WriteString(figureRE)
		n, _ := strconv.Atoi(pattern[m[2]:m[3]])
		refs = append(refs, n)
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(pattern[last:]))
	return regexp.MustCompile(b.String()), refs
}

func TestOneFigurePerMetric(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", path))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(string(b)), " ")
	}
	for _, f := range figures {
		re, _ := compile(f.source.pattern)
		m := re.FindStringSubmatch(read(f.source.file))
		if m == nil {
			t.Errorf("%s: %s no longer has %q", f.name, f.source.file, f.source.pattern)
			continue
		}
		for _, q := range f.quotes {
			re, refs := compile(q.pattern)
			got := re.FindStringSubmatch(read(q.file))
			if got == nil {
				t.Errorf("%s: %s no longer quotes it as %q", f.name, q.file, q.pattern)
				continue
			}
			for i, n := range refs {
				if n < 1 || n >= len(m) {
					t.Fatalf("%s: %q: {%d} is no figure of the source", f.name, q.pattern, n)
				}
				if got[i+1] != m[n] {
					t.Errorf("%s: %s quotes %s in %q where %s measured %s", f.name, q.file, got[i+1], got[0], f.source.file, m[n])
				}
			}
		}
	}
}

// The headline savings figure of the README is the generated diurnal table's net
// saving of Tessera's own autoscaler, rounded to a whole percent.
func TestHeadlineSavings(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := os.ReadFile(filepath.Join("..", "..", "docs", "simulator.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)<!-- figures: tessera simulate --scenario diurnal --autoscale --seeds 3 -o markdown -->(.*?)<!-- /figures -->`).FindSubmatch(sim)
	if block == nil {
		t.Fatal("docs/simulator.md has no generated diurnal autoscaling table")
	}
	row := regexp.MustCompile(`(?m)^\| tessera \| tessera \| \d+ \| [0-9.]+ \| [0-9.]+ \| ([0-9.]+) \|`).FindSubmatch(block[1])
	if row == nil {
		t.Fatal("docs/simulator.md's diurnal table has no tessera/tessera row")
	}
	quote := regexp.MustCompile(`\| GPU-node-hours saved on a week of diurnal demand, net of lost work \| (\d+)%`).FindSubmatch(readme)
	if quote == nil {
		t.Fatal("README.md no longer quotes the diurnal saving")
	}
	net, err := strconv.ParseFloat(string(row[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	if want := int(math.Round(net)); string(quote[1]) != strconv.Itoa(want) {
		t.Errorf("README.md quotes a %s%% net saving; docs/simulator.md's generated table says %s%% (%d%%)", quote[1], row[1], want)
	}
}
