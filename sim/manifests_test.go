package sim

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/sim/trace"
)

func readSmallManifests(t *testing.T) *trace.Manifests {
	t.Helper()
	m, err := trace.ReadManifests("testdata/manifests-small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRunManifests(t *testing.T) {
	m := readSmallManifests(t)
	r, err := RunManifests(m, "tessera", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	placed := map[string]Placement{}
	used := map[string]string{}
	for _, p := range r.Placements {
		placed[p.Pod] = p
		for _, g := range p.GPUs {
			if !strings.HasPrefix(g, "GPU-"+p.Node+"-") {
				t.Errorf("%s on %s got GPU %s of another node", p.Pod, p.Node, g)
			}
			if other, dup := used[g]; dup {
				t.Errorf("GPU %s given to %s and %s", g, other, p.Pod)
			}
			used[g] = p.Pod
		}
	}
	if got := len(r.Placements); got != 4 {
		t.Errorf("placements = %+v, want serving, notebook, pair-0, pair-1", r.Placements)
	}
	if s := placed["prod/serving"]; !s.Existing || s.Node != "gpu-1" || !reflect.DeepEqual(s.GPUs, []string{"GPU-gpu-1-0"}) {
		t.Errorf("running pod = %+v, want it kept on its assigned GPU", s)
	}
	for _, pod := range []string{"team/pair-0", "team/pair-1"} {
		if p := placed[pod]; p.Existing || len(p.GPUs) != 4 {
			t.Errorf("%s = %+v, want 4 GPUs scheduled", pod, p)
		}
	}
	if p := placed["team/notebook"]; len(p.GPUs) != 1 {
		t.Errorf("notebook = %+v, want a slice of one GPU", p)
	}
	want := map[string]string{"team/half-gpu": "Invalid", "team/huge-0": "NotEnqueued", "team/huge-1": "NotEnqueued", "team/huge-2": "NotEnqueued"}
	if len(r.Pending) != len(want) {
		t.Fatalf("pending = %+v", r.Pending)
	}
	for _, p := range r.Pending {
		if want[p.Pod] != p.Reason {
			t.Errorf("%s: reason %q, want %q", p.Pod, p.Reason, want[p.Pod])
		}
		if p.Reason == "NotEnqueued" && !strings.Contains(p.Message, "gang needs 24 GPU but queue research has capability 12 GPU") {
			t.Errorf("%s: message %q does not explain the capability", p.Pod, p.Message)
		}
		if p.Reason == "Invalid" && !strings.Contains(p.Message, "requests[tessera.dev/gpu]: 500m is not a whole number") {
			t.Errorf("%s: message %q", p.Pod, p.Message)
		}
	}
	// 1 running + 8 for the pair + a 10240 MiB slice of an 81920 MiB GPU (125 milli) over 16 GPUs.
	if wantPct := 100 * 9125.0 / 16000; math.Abs(r.AllocatedGPUPct-wantPct) > 1e-9 {
		t.Errorf("allocated = %.3f%%, want %.3f%%", r.AllocatedGPUPct, wantPct)
	}
	if len(r.Problems) != 0 {
		t.Errorf("problems = %v", r.Problems)
	}
	again, err := RunManifests(readSmallManifests(t), "tessera", nil, 1)
	if err != nil || !reflect.DeepEqual(r, again) {
		t.Errorf("a second run differs: %+v\n%+v", r, again)
	}
}

func TestRunManifestsProfiles(t *testing.T) {
	m := readSmallManifests(t)
	// Without gangs and queues the huge gang's pods are tried one by one; with whole
	// GPUs only, the notebook takes a whole GPU.
	r, err := RunManifests(m, "kube-default", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.AllocatedGPUPct-100*10.0/16) > 1e-9 {
		t.Errorf("kube-default allocated %.2f%%, want 62.5%%", r.AllocatedGPUPct)
	}
	for _, p := range r.Pending {
		if strings.HasPrefix(p.Pod, "team/huge-") && p.Reason != "Unschedulable" {
			t.Errorf("%s: %s, want Unschedulable", p.Pod, p.Reason)
		}
	}
	cfg, _ := scheduler.Profile("fgd")
	if _, err := RunManifests(m, "ignored", &cfg, 3); err != nil {
		t.Errorf("explicit config: %v", err)
	}
	if _, err := RunManifests(m, "no-such-profile", nil, 1); err == nil || !strings.Contains(err.Error(), `unknown profile "no-such-profile"`) {
		t.Errorf("unknown profile: %v", err)
	}
	if _, err := RunManifests(&trace.Manifests{Pods: m.Pods}, "tessera", nil, 1); err == nil {
		t.Errorf("manifests without nodes accepted")
	}
}

func TestWriteManifestsResult(t *testing.T) {
	r := ManifestsResult{
		Placements:      []Placement{{Pod: "a/x", Node: "n1", GPUs: []string{"GPU-1", "GPU-2"}}, {Pod: "b/long-name", Node: "n2", Existing: true}},
		Pending:         []PendingPod{{Pod: "a/y", Reason: "GangIncomplete", Message: "1/2 placed"}},
		AllocatedGPUPct: 12.5,
		Problems:        []string{"Queue q: spec.parent: queue \"p\" does not exist"},
	}
	var buf bytes.Buffer
	if err := WriteManifestsResult(&buf, r); err != nil {
		t.Fatal(err)
	}
	want := `POD          NODE  GPUS         STATE
a/x          n1    GPU-1,GPU-2  scheduled
b/long-name  n2    -            running

PENDING POD  REASON          MESSAGE
a/y          GangIncomplete  1/2 placed
warning: Queue q: spec.parent: queue "p" does not exist

allocated GPUs: 12.5%
`
	if buf.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// When no node is usable, the error says why (here: more GPUs than a node may have).
func TestRunManifestsNoUsableNodeSaysWhy(t *testing.T) {
	m, err := trace.DecodeManifests(strings.NewReader("apiVersion: v1\nkind: Node\nmetadata:\n  name: big\nstatus:\n  allocatable: {tessera.dev/gpu: \"128\"}\n"), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = RunManifests(m, "tessera", nil, FirstSeed)
	if err == nil || !strings.Contains(err.Error(), "no usable node: Node big: status.allocatable[tessera.dev/gpu]: 128 GPUs; at most 64 per node are supported") {
		t.Fatalf("got %v", err)
	}
}

// TestRunManifestsModelPins: pods pinned to T4s by node selector or affinity count as
// T4-only demand, so the pod that may use any GPU goes to the V100s and all three run.
func TestRunManifestsModelPins(t *testing.T) {
	m, err := trace.ReadManifests("testdata/manifests-models.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := RunManifests(m, "tessera", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]string{}
	for _, p := range r.Placements {
		nodes[p.Pod] = p.Node
	}
	want := map[string]string{"team/any": "v100", "team/pinned-by-selector": "t4", "team/pinned-by-affinity": "t4"}
	if !reflect.DeepEqual(nodes, want) || len(r.Pending) != 0 {
		t.Errorf("placed %v, pending %v; want %v", nodes, r.Pending, want)
	}
}

// TestRunManifestsClusterDump: a dump of a live cluster (GPU feature discovery nodes
// with nvidia.com/gpu, PriorityClasses, a Job without its pods, Volcano objects) is
// read as the cluster it describes.
func TestRunManifestsClusterDump(t *testing.T) {
	m, err := trace.ReadManifests("testdata/cluster-dump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	classes, globalDefault := PriorityClasses(m)
	if classes["serving-critical"] != 1000 || globalDefault != 200 {
		t.Errorf("classes = %v, global default %d; want the dump's", classes, globalDefault)
	}
	r, err := RunManifests(m, "tessera", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 0 {
		t.Errorf("problems = %q, want none", r.Problems)
	}
	gpus := 0
	for _, p := range r.Placements {
		gpus += len(p.GPUs)
		if strings.HasPrefix(p.Pod, "research/finetune-llama-") && p.Existing {
			t.Errorf("%s = %+v, want scheduled", p.Pod, p)
		}
	}
	if gpus != 10 { // the running serving pod's 2 and the fine-tune Job's 4 x 2
		t.Errorf("placements = %+v, want 10 GPUs held", r.Placements)
	}
	if len(r.Pending) != 2 || !strings.HasPrefix(r.Pending[0].Pod, "research/pretrain-worker-") {
		t.Errorf("pending = %+v, want the Volcano Job's 2 workers", r.Pending)
	}
	if len(r.Notes) != 4 {
		t.Errorf("notes = %q, want the Volcano restartPolicy and policy notes and two Job expansions", r.Notes)
	}
	if r.AllocatedGPUPct != 62.5 {
		t.Errorf("allocated = %.1f%%, want 62.5%%", r.AllocatedGPUPct)
	}
}
