package preview

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/sim"
	"github.com/tessera-gpu/tessera/sim/trace"
)

const example = "../clusters/example"

// asIs admits everything unchanged, so these tests see the overlay and the diff alone.
func asIs(_ context.Context, m *trace.Manifests) (*trace.Manifests, sim.AdmissionResult, error) {
	return m, sim.AdmissionResult{}, nil
}

// TestLoad reads the example cluster's managed kinds and skips the others.
func TestLoad(t *testing.T) {
	m, err := Load(example)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Queues) != 2 || len(m.AdmissionPolicies) != 1 || len(m.PriorityClasses) != 3 || len(m.Namespaces) != 2 {
		t.Errorf("loaded %d queues, %d policies, %d priority classes, %d namespaces; want 2, 1, 3, 2",
			len(m.Queues), len(m.AdmissionPolicies), len(m.PriorityClasses), len(m.Namespaces))
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("a directory without kustomization.yaml loaded")
	}
}

// TestOverlay: the repository owns Queues and AdmissionPolicies; its PriorityClasses and
// Namespaces replace the cluster's of the same name and keep the others.
func TestOverlay(t *testing.T) {
	cluster := &trace.Manifests{
		Queues:          []tesserav1.Queue{{ObjectMeta: metav1.ObjectMeta{Name: "stale"}}},
		Namespaces:      []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}}, {ObjectMeta: metav1.ObjectMeta{Name: "research"}}},
		PriorityClasses: []schedulingv1.PriorityClass{{ObjectMeta: metav1.ObjectMeta{Name: "batch-normal"}, Value: 1}},
	}
	repo := &trace.Manifests{
		Queues:          []tesserav1.Queue{{ObjectMeta: metav1.ObjectMeta{Name: "train-dev"}}},
		Namespaces:      []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "research", Annotations: map[string]string{"tessera.dev/queue": "train-dev"}}}},
		PriorityClasses: []schedulingv1.PriorityClass{{ObjectMeta: metav1.ObjectMeta{Name: "batch-normal"}, Value: 50}},
	}
	out := Overlay(cluster, repo)
	if len(out.Queues) != 1 || out.Queues[0].Name != "train-dev" {
		t.Errorf("queues = %v, want the repository's only", out.Queues)
	}
	if len(out.Namespaces) != 2 || out.Namespaces[1].Annotations["tessera.dev/queue"] != "train-dev" {
		t.Errorf("namespaces = %v, want kube-system kept and research replaced", out.Namespaces)
	}
	if len(out.PriorityClasses) != 1 || out.PriorityClasses[0].Value != 50 {
		t.Errorf("priority classes = %v, want batch-normal = 50", out.PriorityClasses)
	}
	if cluster.Queues[0].Name != "stale" || cluster.Namespaces[1].Annotations != nil {
		t.Error("Overlay changed the cluster")
	}
}

// TestRunCapabilityChange: raising train-dev's capability from 10 to 12 GPUs lets two
// more experiments of the sweep run, and only train-dev changes.
func TestRunCapabilityChange(t *testing.T) {
	cluster, err := trace.ReadManifests("testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, h := withDevCapability(t, "12")
	p, err := Run(context.Background(), cluster, b, h, asIs, "tessera", nil, sim.FirstSeed)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Queues() {
		switch c.Queue {
		case "train-dev":
			if c.Base.AllocatedGPUs != 10 || c.Head.AllocatedGPUs != 12 || !c.Changed() {
				t.Errorf("train-dev %+v, want 10 -> 12 GPUs", c)
			}
		default:
			if c.Changed() {
				t.Errorf("%s changed: %+v", c.Queue, c)
			}
		}
	}
	var md bytes.Buffer
	if err := p.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| `train-dev` **changed** | 10 → 12 (+2) |") {
		t.Errorf("markdown:\n%s", md.String())
	}
	// Deterministic; progress (standard error's, here a buffer) changes nothing.
	var progress bytes.Buffer
	again, err := Run(context.Background(), cluster, b, h, asIs, "tessera", nil, sim.FirstSeed, WithProgress(&progress))
	if err != nil {
		t.Fatal(err)
	}
	var first, second bytes.Buffer
	_ = p.WriteText(&first)
	_ = again.WriteText(&second)
	if first.String() != second.String() {
		t.Errorf("two runs differ:\n%s\n%s", first.String(), second.String())
	}
	if got := progress.String(); !strings.Contains(got, "admitting and scheduling base and head:  50%  2/4") ||
		!strings.Contains(got, "admitting and scheduling base and head: 100%  4/4") {
		t.Errorf("progress:\n%s", got)
	}
}

func TestChange(t *testing.T) {
	for _, tc := range []struct {
		base, head float64
		want       string
	}{{4, 4, "4"}, {4, 6, "4 → 6 (+2)"}, {2, 0.5, "2 → 0.5 (-1.5)"}} {
		if got := change(tc.base, tc.head); got != tc.want {
			t.Errorf("change(%v, %v) = %q, want %q", tc.base, tc.head, got, tc.want)
		}
	}
}

// copyDir copies a directory tree into a temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// raise replaces old by new in the file, which must contain old.
func raise(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s: %v, or %q not found", path, err, old)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunReplayCapabilityChange: in the operator scenario's replay, raising train-dev's
// capability shortens train-dev's waits; the figures are scaled to the scenario.
func TestRunReplayCapabilityChange(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a day of the operator scenario twice")
	}
	b, h := withDevCapability(t, "14")
	var progress bytes.Buffer
	p, err := RunReplay("operator", b, h, "tessera", nil, 1, WithProgress(&progress))
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"base", "head"} {
		if want := "replaying " + side + " (1 seed):  10%"; !strings.Contains(progress.String(), want) ||
			!strings.Contains(progress.String(), "replaying "+side+" (1 seed): 100%") {
			t.Errorf("progress lacks %q or its 100%% line:\n%s", want, progress.String())
		}
	}
	if p.Scale != 4 {
		t.Errorf("scale = %v, want 4 (80 GPUs over 20 deserved)", p.Scale)
	}
	dev := func(s ReplaySide) ReplayQueue {
		for _, q := range s.Queues {
			if q.Queue == "train-dev" {
				return q
			}
		}
		t.Fatalf("no train-dev in %+v", s)
		return ReplayQueue{}
	}
	if b, h := dev(p.Base), dev(p.Head); h.MeanWaitSeconds >= b.MeanWaitSeconds {
		t.Errorf("train-dev mean wait %.0fs -> %.0fs, want shorter with a higher capability", b.MeanWaitSeconds, h.MeanWaitSeconds)
	}
	var out bytes.Buffer
	if err := p.WriteText(&out); err != nil || !strings.Contains(out.String(), "train-dev") {
		t.Errorf("text: %v\n%s", err, out.String())
	}
}

// TestRunReplayScaleDownChange: each side's ScaleDownPolicy removes the scenario's idle
// nodes; a longer idleAfter and surplusAfter keep more node-hours on, a side without one
// keeps every node, and two policies that remove nodes are refused.
func TestRunReplayScaleDownChange(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a day of the operator scenario four times")
	}
	dir := copyDir(t, example)
	raise(t, filepath.Join(dir, "scaledown/scaledown.yaml"), "idleAfter: 10m", "idleAfter: 3h\n  surplusAfter: 3h")
	base, err := Load(example)
	if err != nil {
		t.Fatal(err)
	}
	head, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(base.ScaleDownPolicies) != 1 || base.ScaleDownPolicies[0].Spec.NodeSelector == nil {
		t.Fatalf("the example's ScaleDownPolicy with its nodeSelector: %+v", base.ScaleDownPolicies)
	}
	p, err := RunReplay("operator", base, head, "tessera", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(p.Objects); got != "[ScaleDownPolicy idle-gpu-nodes changed]" {
		t.Errorf("objects %s", got)
	}
	if p.Base.ScaleDown != "idle-gpu-nodes" || p.Base.NodesRemoved == 0 || p.Head.GPUNodeHours <= p.Base.GPUNodeHours {
		t.Errorf("idleAfter and surplusAfter -> 3h: base %+v, head %+v; want nodes removed in base (its nodeSelector does not apply to the scenario) and more node-hours in head",
			p.Base, p.Head)
	}
	var text bytes.Buffer
	if err := p.WriteText(&text); err != nil || !strings.Contains(text.String(), "scale-down by idle-gpu-nodes, its settings on every node of the scenario: GPU-node-hours ") {
		t.Errorf("text: %v\n%s", err, text.String())
	}

	head.ScaleDownPolicies = nil
	if p, err = RunReplay("operator", base, head, "tessera", nil, 1); err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := p.WriteMarkdown(&md); err != nil || p.Head.NodesRemoved != 0 || p.Head.GPUNodeHours <= p.Base.GPUNodeHours ||
		!strings.Contains(md.String(), "scale-down by idle-gpu-nodes → none (every node on)") {
		t.Errorf("policy removed: %v, base %+v, head %+v\n%s", err, p.Base, p.Head, md.String())
	}

	head.ScaleDownPolicies = append(slices.Clone(base.ScaleDownPolicies), base.ScaleDownPolicies[0])
	head.ScaleDownPolicies[1].Name = "second"
	if _, err := RunReplay("operator", base, head, "tessera", nil, 1); err == nil || !strings.Contains(err.Error(), "--head: 2 ScaleDownPolicies remove nodes (idle-gpu-nodes, second)") {
		t.Errorf("two policies that remove nodes: %v", err)
	}
}

func TestMinutes(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0m", 18 * time.Minute: "18m", 107*time.Minute + 20*time.Second: "1h47m"} {
		if got := minutes(d); got != want {
			t.Errorf("minutes(%v) = %q, want %q", d, got, want)
		}
	}
}

// withDevCapability loads the example as base and, as head, a copy whose train-dev
// capability is gpus instead of 10.
func withDevCapability(t *testing.T, gpus string) (base, head *trace.Manifests) {
	t.Helper()
	dir := copyDir(t, example)
	raise(t, filepath.Join(dir, "queues/queues.yaml"), `tessera.dev/gpu: "10"`, `tessera.dev/gpu: "`+gpus+`"`)
	base, err := Load(example)
	if err != nil {
		t.Fatal(err)
	}
	if head, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	return base, head
}
