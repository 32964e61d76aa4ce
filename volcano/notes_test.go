package volcano_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tessera-gpu/tessera/volcano"
)

// carried are the fields of each Volcano kind that the conversion carries over (the
// fields of a Job's tasks under "task"); every other field must be noted.
var carried = map[string][]string{
	"Queue":    {"weight", "capability", "deserved", "guarantee", "reclaimable", "parent", "priority"},
	"PodGroup": {"minMember", "queue", "priorityClassName", "minResources"},
	"Job":      {"minAvailable", "queue", "priorityClassName", "tasks", "schedulerName", "maxRetry", "ttlSecondsAfterFinished"},
	"task":     {"name", "replicas", "template", "maxRetry"},
}

// TestEveryFieldLeftOutIsNoted: in every fixture, converted either way (JobSets or
// not), each field of a Volcano object's spec (and of each task) that the conversion
// does not carry over whole has a note naming it or one of its fields, as do the
// Volcano annotations Tessera does not read.
func TestEveryFieldLeftOutIsNoted(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.yaml")
	if len(files) < 2 {
		t.Fatalf("fixtures: %v", files)
	}
	checked := 0
	for _, f := range files {
		objs := readFixture(t, f)
		for _, jobSet := range []bool{false, true} {
			_, notes, err := volcano.Convert(objs, volcano.Options{JobSet: jobSet})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			noted := map[string]bool{}
			for _, n := range notes {
				// The field and each field above it ("spec.plugins.svc": "spec.plugins").
				for f := n.Field; f != ""; f = f[:max(strings.LastIndex(f, "."), 0)] {
					noted[n.Object+" "+f] = true
				}
			}
			for _, u := range objs {
				for _, field := range leftOut(u) {
					checked++
					if id := u.GetKind() + " " + objectName(u) + " " + field; !noted[id] {
						t.Errorf("%s (JobSet %t): %s %s: %s is not carried over and has no note", f, jobSet, u.GetKind(), objectName(u), field)
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d fields left out in the fixtures; they should show many", checked)
	}
}

// leftOut lists the fields of u that the conversion does not carry over.
func leftOut(u *unstructured.Unstructured) []string {
	group := strings.Split(u.GetAPIVersion(), "/")[0]
	if !strings.HasSuffix(group, "volcano.sh") {
		return nil
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(u.GetAnnotations())) {
		if strings.Contains(k, "volcano.sh/") && k != "scheduling.volcano.sh/queue-name" && k != "scheduling.k8s.io/group-name" && k != "scheduling.volcano.sh/group-min-member" {
			out = append(out, "metadata.annotations["+k+"]")
		}
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	for _, k := range slices.Sorted(maps.Keys(spec)) {
		if !slices.Contains(carried[u.GetKind()], k) {
			out = append(out, "spec."+k)
		}
	}
	tasks, _, _ := unstructured.NestedSlice(u.Object, "spec", "tasks")
	for i, task := range tasks {
		m, _ := task.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !slices.Contains(carried["task"], k) {
				out = append(out, fmt.Sprintf("spec.tasks[%d].%s", i, k))
			}
		}
	}
	return out
}

func objectName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}
