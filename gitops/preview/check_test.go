package preview

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/internal/yamlerr"
	"github.com/tessera-gpu/tessera/sim"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// brokenPolicy loads a copy of the example whose AdmissionPolicy does not compile.
func brokenPolicy(t *testing.T) *trace.Manifests {
	t.Helper()
	dir := copyDir(t, example)
	raise(t, filepath.Join(dir, "policies/max-gpus-per-pod.yaml"), "limit := 8", "limit := ")
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBrokenPoliciesFail: a side whose policies do not compile fails every kind of
// preview with the compiler's message, naming the side; none shows a table.
func TestBrokenPoliciesFail(t *testing.T) {
	good, err := Load(example)
	if err != nil {
		t.Fatal(err)
	}
	broken := brokenPolicy(t)
	cluster, err := trace.ReadManifests("testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		base, head *trace.Manifests
		want       []string
	}{
		{"head", good, broken, []string{"--head: its admission policies do not compile", "max-gpus-per-pod.rego:5"}},
		{"base", broken, good, []string{"--base: its admission policies do not compile"}},
		{"both", broken, broken, []string{"--base: ", "--head: "}},
	} {
		runs := map[string]func() error{
			"manifests": func() error {
				_, err := Run(context.Background(), cluster, tc.base, tc.head, asIs, "tessera", nil, sim.FirstSeed)
				return err
			},
			"scenario": func() error {
				_, err := RunReplay("operator", tc.base, tc.head, "tessera", nil, 1)
				return err
			},
		}
		for mode, run := range runs {
			err := run()
			var pe *PolicyError
			if !errors.As(err, &pe) {
				t.Errorf("%s, %s: got %v, want a PolicyError", tc.name, mode, err)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s, %s: %q does not contain %q", tc.name, mode, err, w)
				}
			}
		}
	}
}

// TestNoChange: the same configuration on both sides says so, and lists no object.
func TestNoChange(t *testing.T) {
	m, err := Load(example)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := trace.ReadManifests("testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Run(context.Background(), cluster, m, m, asIs, "tessera", nil, sim.FirstSeed)
	if err != nil {
		t.Fatal(err)
	}
	var text, md bytes.Buffer
	if err := p.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if len(p.Objects) != 0 || !strings.HasPrefix(text.String(), "no change: ") || !strings.Contains(md.String(), "**No change**") {
		t.Errorf("objects %v\ntext:\n%s\nmarkdown:\n%s", p.Objects, text.String(), md.String())
	}
}

// TestObjectsThatDiffer: the preview names each object head adds, removes or changes.
func TestObjectsThatDiffer(t *testing.T) {
	base, head := withDevCapability(t, "12")
	head.Queues = head.Queues[:1] // one of the two queues removed
	head.PriorityClasses = append(head.PriorityClasses, head.PriorityClasses[0])
	head.PriorityClasses[len(head.PriorityClasses)-1].Name = "urgent"
	got := fmt.Sprint(Diff(base, head))
	for _, q := range base.Queues[1:] {
		if !strings.Contains(got, "Queue "+q.Name+" removed") {
			t.Errorf("no removed %s in %s", q.Name, got)
		}
	}
	if !strings.Contains(got, "PriorityClass urgent added") || strings.Contains(got, "Namespace") || strings.Contains(got, "AdmissionPolicy") {
		t.Errorf("diff %s", got)
	}
	base, head = withDevCapability(t, "12")
	if got := Diff(base, head); len(got) != 1 || got[0] != (ObjectChange{"Queue", "train-dev", "changed"}) {
		t.Errorf("capability raised: diff %v", got)
	}
}

// TestHostileInput: a YAML bomb in a side or in the cluster is refused at once, naming
// the file and the limit.
func TestHostileInput(t *testing.T) {
	dir := copyDir(t, example)
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n  l0: &l0 [lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	if err := os.WriteFile(filepath.Join(dir, "queues/queues.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := Load(dir); !errors.Is(err, yamlerr.ErrLimit) || !strings.Contains(err.Error(), "queues.yaml") {
		t.Errorf("Load: %v", err)
	}
	if _, err := ReadCluster(filepath.Join(dir, "queues/queues.yaml")); !errors.Is(err, yamlerr.ErrLimit) {
		t.Errorf("ReadCluster: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if _, err := ReadCluster("testdata/cluster.yaml"); err != nil {
		t.Error(err)
	}
}
