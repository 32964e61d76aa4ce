package snapshot

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// unlimited is the value of a capability dimension that the spec does not name.
var unlimited = framework.Unlimited.MilliCPU

// convertQueue turns a Queue into a framework.Queue; the parent is linked later.
func convertQueue(q *tesserav1.Queue) *framework.Queue {
	out := &framework.Queue{
		Name:        q.Name,
		Weight:      max(q.Spec.Weight, 1),
		Priority:    q.Spec.Priority,
		Reclaimable: q.Spec.Reclaimable == nil || *q.Spec.Reclaimable,
		Guarantee:   framework.FromResourceList(q.Spec.Guarantee),
		Capability:  capability(q.Spec.Capability),
		// The API server defaults spec.maxMinRuntime; objects that never went through it may lack it.
		MaxMinRuntime: tesserav1.DefaultMaxMinRuntime,
	}
	if q.Spec.MaxMinRuntime != nil {
		out.MaxMinRuntime = q.Spec.MaxMinRuntime.Duration
	}
	if len(q.Spec.Deserved) > 0 {
		out.Deserved = framework.FromResourceList(q.Spec.Deserved)
	}
	return out
}

// capability converts spec.capability so that every dimension it does not name is
// unlimited: framework.Resources.FitsIn treats a zero limit (and an absent scalar) as
// "none allowed". Scalars the spec does not name are filled in by fillScalars once all
// resource names in the snapshot are known.
func capability(rl corev1.ResourceList) framework.Resources {
	c := framework.Unlimited.Clone()
	if len(rl) == 0 {
		return c
	}
	set := framework.FromResourceList(rl)
	for name := range rl {
		switch name {
		case corev1.ResourceCPU:
			c.MilliCPU = set.MilliCPU
		case corev1.ResourceMemory:
			c.Memory = set.Memory
		case tesserav1.ResourceGPU, tesserav1.ResourceNvidiaGPU:
			c.GPU = set.GPU
		case corev1.ResourcePods:
			c.Pods = set.Pods
		case tesserav1.ResourceGPUMemory:
			// a per-GPU request, not part of the vector
		default:
			if c.Scalar == nil {
				c.Scalar = map[corev1.ResourceName]int64{}
			}
			c.Scalar[name] = set.Scalar[name]
		}
	}
	return c
}

// fillScalars makes every scalar resource in names unlimited in the queue's capability
// unless its spec names it.
func fillScalars(q *framework.Queue, spec corev1.ResourceList, names map[corev1.ResourceName]bool) {
	for name := range names {
		if _, named := spec[name]; named {
			continue
		}
		if q.Capability.Scalar == nil {
			q.Capability.Scalar = make(map[corev1.ResourceName]int64, len(names))
		}
		q.Capability.Scalar[name] = unlimited
	}
}

// linkQueues resolves spec.parent. A queue whose parent is unknown, or that is part of
// a cycle, is reported and kept as a root queue.
func linkQueues(queues []*framework.Queue, specs map[string]*tesserav1.Queue) []error {
	var errs []error
	byName := make(map[string]*framework.Queue, len(queues))
	for _, q := range queues {
		byName[q.Name] = q
	}
	for _, q := range queues {
		p := specs[q.Name].Spec.Parent
		if p == "" {
			continue
		}
		parent, ok := byName[p]
		if !ok {
			errs = append(errs, objErr("Queue", "", q.Name, "spec.parent", "queue %q does not exist; create it or remove spec.parent (the queue is treated as a root queue)", p))
			continue
		}
		q.Parent = parent
	}
	// Break cycles: walk each queue's ancestors; a queue met twice closes a cycle.
	done := map[*framework.Queue]bool{}
	for _, q := range queues {
		var path []*framework.Queue
		onPath := map[*framework.Queue]int{}
		x := q
		for x != nil && !done[x] {
			if i, seen := onPath[x]; seen {
				cycle := path[i:]
				names := make([]string, 0, len(cycle)+1)
				for _, c := range cycle {
					names = append(names, c.Name)
				}
				names = append(names, x.Name)
				for _, c := range cycle {
					c.Parent = nil
				}
				errs = append(errs, objErr("Queue", "", x.Name, "spec.parent", "queues form a cycle %s; break it (the queues are treated as root queues)", strings.Join(names, " -> ")))
				break
			}
			onPath[x] = len(path)
			path = append(path, x)
			x = x.Parent
		}
		for _, p := range path {
			done[p] = true
		}
	}
	for _, q := range queues {
		if q.Parent != nil {
			q.Parent.Children = append(q.Parent.Children, q)
		}
	}
	for _, q := range queues {
		slices.SortFunc(q.Children, func(a, b *framework.Queue) int { return strings.Compare(a.Name, b.Name) })
	}
	return errs
}

// access is who may use a queue: the namespaces its spec.namespaceSelector selects
// and the priority classes its spec.allowedPriorityClasses lists.
type access struct {
	selected func(labels.Labels) bool // nil: every namespace
	classes  []string                 // empty: the cluster's default class only
}

// accessOf reads a queue's access; a selector that does not parse selects no namespace.
func accessOf(q *tesserav1.Queue) access {
	a := access{classes: q.Spec.AllowedPriorityClasses}
	if q.Spec.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(q.Spec.NamespaceSelector)
		if err != nil {
			sel = labels.Nothing()
		}
		a.selected = sel.Matches
	}
	return a
}

// refuses says why queue, with access a, does not take a job of namespace ns (whose
// labels are nsLabels) whose PodGroup and pods name classes; "" when it takes it. A
// class "" is the cluster's default class, defaultClass ("" for none).
func (a access) refuses(queue, ns string, nsLabels labels.Labels, classes []string, defaultClass string) string {
	if a.selected != nil && !a.selected(nsLabels) {
		return fmt.Sprintf("queue %q does not take workloads from namespace %q (its spec.namespaceSelector); name a queue that selects the namespace", queue, ns)
	}
	for _, c := range classes {
		if c == "" {
			c = defaultClass
		}
		switch {
		case len(a.classes) == 0 && c != defaultClass:
			return fmt.Sprintf("priorityClassName %q is not allowed in queue %q: it lists no spec.allowedPriorityClasses, so it takes %s",
				c, queue, onlyDefault(defaultClass))
		case len(a.classes) > 0 && c != "" && !slices.Contains(a.classes, c):
			return fmt.Sprintf("priorityClassName %q is not allowed in queue %q (its spec.allowedPriorityClasses: [%s])", c, queue, strings.Join(a.classes, ", "))
		}
	}
	return ""
}

// onlyDefault describes the work a queue without allowed classes takes.
func onlyDefault(defaultClass string) string {
	if defaultClass == "" {
		return "only pods without a priorityClassName (no PriorityClass is the cluster's globalDefault)"
	}
	return fmt.Sprintf("only the cluster's default class %q", defaultClass)
}
