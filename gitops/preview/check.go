package preview

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"

	"github.com/tessera-gpu/tessera/internal/yamlerr"
	"github.com/tessera-gpu/tessera/sim/trace"
	"github.com/tessera-gpu/tessera/webhooks"
)

// PolicyError is a version of the configuration whose admission policies do not
// compile or fail their tests: the webhook would reject them, so a preview of that
// version would show a cluster that cannot exist.
type PolicyError struct {
	Side string // "--base" or "--head"
	Err  error
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("%s: its admission policies do not compile or fail their tests, so the webhook would reject them: %v", e.Side, e.Err)
}

func (e *PolicyError) Unwrap() error { return e.Err }

// CheckPolicies compiles each side's AdmissionPolicies with the built-in ones, as the
// webhook loads them, and runs their tests; the error joins a *PolicyError per broken
// side. Every kind of preview checks first, so none shows a version the webhook
// would refuse.
func CheckPolicies(ctx context.Context, base, head *trace.Manifests) error {
	var errs []error
	for _, s := range []struct {
		name string
		m    *trace.Manifests
	}{{"--base", base}, {"--head", head}} {
		if _, err := webhooks.NewLocal(ctx, s.m.AdmissionPolicies, nil); err != nil {
			errs = append(errs, &PolicyError{Side: s.name, Err: err})
		}
	}
	return errors.Join(errs...)
}

// ReadCluster reads a cluster description (--manifests) as trace.ReadManifests does,
// after checking it against the YAML reader's limits (yamlerr.MaxFileBytes,
// yamlerr.MaxAliasNodes).
func ReadCluster(path string) (*trace.Manifests, error) {
	b, err := yamlerr.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return trace.DecodeManifests(bytes.NewReader(b), path)
}

// ObjectChange is an object of the managed kinds that head adds, removes or changes.
type ObjectChange struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Change string `json:"change"` // added, removed or changed
}

func (c ObjectChange) String() string { return c.Kind + " " + c.Name + " " + c.Change }

// Diff lists the Queues, AdmissionPolicies, PriorityClasses, Namespaces and
// ScaleDownPolicies that differ between base and head, by kind and name.
func Diff(base, head *trace.Manifests) []ObjectChange {
	var out []ObjectChange
	out = append(out, diffKind("Queue", base.Queues, head.Queues, func(o *tesserav1.Queue) string { return o.Name })...)
	out = append(out, diffKind("AdmissionPolicy", base.AdmissionPolicies, head.AdmissionPolicies, func(o *tesserav1.AdmissionPolicy) string { return o.Name })...)
	out = append(out, diffKind("PriorityClass", base.PriorityClasses, head.PriorityClasses, func(o *schedulingv1.PriorityClass) string { return o.Name })...)
	out = append(out, diffKind("Namespace", base.Namespaces, head.Namespaces, func(o *corev1.Namespace) string { return o.Name })...)
	out = append(out, diffKind("ScaleDownPolicy", base.ScaleDownPolicies, head.ScaleDownPolicies, func(o *tesserav1.ScaleDownPolicy) string { return o.Name })...)
	return out
}

// diffKind compares two sides' objects of one kind by name.
func diffKind[T any](kind string, base, head []T, name func(*T) string) []ObjectChange {
	index := func(objs []T) map[string]*T {
		m := make(map[string]*T, len(objs))
		for i := range objs {
			m[name(&objs[i])] = &objs[i]
		}
		return m
	}
	b, h := index(base), index(head)
	var out []ObjectChange
	for _, n := range slices.Sorted(maps.Keys(b)) {
		switch ho, ok := h[n]; {
		case !ok:
			out = append(out, ObjectChange{kind, n, "removed"})
		case !equality.Semantic.DeepEqual(*b[n], *ho):
			out = append(out, ObjectChange{kind, n, "changed"})
		}
	}
	for _, n := range slices.Sorted(maps.Keys(h)) {
		if _, ok := b[n]; !ok {
			out = append(out, ObjectChange{kind, n, "added"})
		}
	}
	return out
}

// noChange says that base and head define the same objects.
const noChange = "no change: --base and --head define the same Queues, AdmissionPolicies, PriorityClasses, Namespaces and ScaleDownPolicies"

// writeObjectsText lists the objects that differ, or says there is no change.
func writeObjectsText(w io.Writer, objs []ObjectChange) error {
	var b strings.Builder
	if len(objs) == 0 {
		b.WriteString(noChange + "\n")
	} else {
		fmt.Fprintf(&b, "objects that differ (%d):\n", len(objs))
		for _, o := range objs {
			fmt.Fprintf(&b, "  %s\n", o)
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeObjectsMarkdown is writeObjectsText for a pull request comment.
func writeObjectsMarkdown(b *strings.Builder, objs []ObjectChange) {
	if len(objs) == 0 {
		b.WriteString("**No change**: `--base` and `--head` define the same Queues, AdmissionPolicies, PriorityClasses, Namespaces and ScaleDownPolicies.\n\n")
		return
	}
	fmt.Fprintf(b, "Objects that differ (%d):\n\n", len(objs))
	for _, o := range objs {
		fmt.Fprintf(b, "- `%s %s` %s\n", o.Kind, o.Name, o.Change)
	}
	b.WriteString("\n")
}
