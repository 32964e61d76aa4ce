package snapshot

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

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
