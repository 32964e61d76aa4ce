package sim

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// ManifestPriorityClasses are the priority classes YAML mode knows without being told
// (Tessera's deployed classes); PriorityClass objects in the manifests add to them and
// override them.
var ManifestPriorityClasses = map[string]int32{"production-high": 100, "batch-normal": 50, "offline-low": 0}

// PriorityClasses are the classes a pod of m may name, by name, and the value a pod
// naming none gets (the globalDefault class's, else 0), as the API server's Priority
// admission resolves them.
func PriorityClasses(m *trace.Manifests) (classes map[string]int32, globalDefault int32) {
	classes = maps.Clone(ManifestPriorityClasses)
	for _, pc := range m.PriorityClasses {
		classes[pc.Name] = pc.Value
		if pc.GlobalDefault {
			globalDefault = pc.Value
		}
	}
	return classes, globalDefault
}

// globalDefaultClass is the name of m's globalDefault PriorityClass, "" for none.
func globalDefaultClass(m *trace.Manifests) string {
	name := ""
	for _, pc := range m.PriorityClasses {
		if pc.GlobalDefault {
			name = pc.Name
		}
	}
	return name
}

// maxManifestSessions bounds the sessions RunManifests runs.
const maxManifestSessions = 10

// Placement is where a pod runs: bound in the manifests or by the simulated scheduler.
type Placement struct {
	Pod  string `json:"pod"` // namespace/name
	Node string `json:"node"`
	// GPUs are the UUIDs of the pod's GPUs.
	GPUs []string `json:"gpus,omitempty"`
	// Existing is true for pods the manifests already bound to a node.
	Existing bool `json:"existing"`
}

// PendingPod is a pod that stays pending, and why.
type PendingPod struct {
	Pod     string `json:"pod"`    // namespace/name
	Reason  string `json:"reason"` // a framework reason code, or "Invalid" for pods that could not be read
	Message string `json:"message"`
}

// ManifestsResult is what the scheduler would do with a cluster described in YAML.
type ManifestsResult struct {
	Placements []Placement  `json:"placements"`
	Pending    []PendingPod `json:"pending"`
	// AllocatedGPUPct is the share of the cluster's GPUs held after scheduling.
	AllocatedGPUPct float64 `json:"allocated_gpu_pct"`
	// Problems are the objects other than pods that were left out or partly ignored.
	Problems []string `json:"problems"`
	// Notes say what reading the manifests changed: pods made from Job templates,
	// Volcano fields without a Tessera equivalent.
	Notes []string `json:"notes"`
	// Queues are what each queue holds and waits for after scheduling, by name.
	Queues []QueueUse `json:"queues"`
}

// QueueUse is what one queue's pods hold and wait for after scheduling.
type QueueUse struct {
	Queue         string  `json:"queue"`
	AllocatedGPUs float64 `json:"allocated_gpus"`
	RunningPods   int     `json:"running_pods"`
	PendingPods   int     `json:"pending_pods"`
}

// queueUse sums the snapshot's tasks per queue, in queue name order.
func queueUse(snap *framework.Snapshot) []QueueUse {
	by := map[string]*QueueUse{}
	for _, j := range snap.Jobs {
		name := ""
		if j.Queue != nil {
			name = j.Queue.Name
		}
		u := by[name]
		if u == nil {
			u = &QueueUse{Queue: name}
			by[name] = u
		}
		for _, t := range j.Tasks {
			switch {
			case t.Node != nil:
				u.RunningPods++
				u.AllocatedGPUs += float64(t.Placed.GPU) / framework.MilliPerGPU
			case t.Status == framework.TaskPending:
				u.PendingPods++
			}
		}
	}
	out := make([]QueueUse, 0, len(by))
	for _, name := range slices.Sorted(maps.Keys(by)) {
		out = append(out, *by[name])
	}
	return out
}

// RunManifests builds a snapshot from the manifests and runs scheduler sessions (the
// named profile, or cfg when not nil) until a session binds nothing, at most 10 times;
// bound pods count as running in the next session. The clock is the latest timestamp
// in the manifests, so results depend only on the input and the seed.
func RunManifests(m *trace.Manifests, profile string, cfg *scheduler.Config, seed int64) (ManifestsResult, error) {
	c, err := configFor(profile, cfg, seed)
	if err != nil {
		return ManifestsResult{}, err
	}
	s, err := scheduler.New(c)
	if err != nil {
		return ManifestsResult{}, err
	}
	now := manifestsNow(m)
	classes, globalDefault := PriorityClasses(m)
	b := snapshot.NewBuilder(now, snapshot.Options{PriorityClasses: classes, DefaultPriorityClass: globalDefaultClass(m), WholeGPUs: c.WholeGPUs})
	for i := range m.Nodes {
		b.AddNode(&m.Nodes[i], nil)
	}
	for i := range m.Namespaces {
		b.AddNamespace(&m.Namespaces[i])
	}
	for i := range m.Queues {
		b.AddQueue(&m.Queues[i])
	}
	for i := range m.Jobs {
		b.AddJob(&m.Jobs[i])
	}
	for i := range m.PodGroups {
		b.AddPodGroup(&m.PodGroups[i])
	}
	for i := range m.Pods {
		prio, ok := classes[m.Pods[i].Spec.PriorityClassName]
		if !ok {
			prio = globalDefault
		}
		b.AddPod(&m.Pods[i], prio)
	}
	snap, errs := b.Build()
	res := ManifestsResult{Notes: m.Notes}
	for _, e := range errs {
		var oe *snapshot.ObjectError
		if errors.As(e, &oe) && oe.Kind == "Pod" && !podPresent(snap, oe.Namespace+"/"+oe.Name) {
			res.Pending = append(res.Pending, PendingPod{Pod: oe.Namespace + "/" + oe.Name, Reason: "Invalid", Message: e.Error()})
			continue
		}
		res.Problems = append(res.Problems, e.Error())
	}
	if len(snap.Nodes) == 0 {
		if len(res.Problems) == 0 {
			return res, fmt.Errorf("the manifests describe no node")
		}
		return res, fmt.Errorf("the manifests describe no usable node: %s", strings.Join(res.Problems, "; "))
	}
	for i := range m.Pods {
		if p := &m.Pods[i]; p.Spec.NodeName == "" && p.Spec.SchedulerName != tesserav1.SchedulerName {
			res.Problems = append(res.Problems, fmt.Sprintf("Pod %s/%s: spec.schedulerName %q is not %s, so another scheduler places it (the admission policies set %s on GPU workloads)",
				p.Namespace, p.Name, p.Spec.SchedulerName, tesserav1.SchedulerName, tesserav1.SchedulerName))
		}
	}
	existing := map[*framework.Task]bool{}
	for _, n := range snap.Nodes {
		for _, t := range n.Tasks {
			existing[t] = true
		}
	}
	for range maxManifestSessions {
		r := s.RunSession(snap)
		for _, bd := range r.Bindings {
			bd.Task.Status = framework.TaskRunning
			bd.Task.StartTime = now
		}
		if len(r.Bindings) == 0 {
			break
		}
	}
	var alloc, total int64
	for _, n := range snap.Nodes {
		alloc += n.Used.GPU
		total += n.Allocatable.GPU
		for _, t := range n.Tasks {
			p := Placement{Pod: t.Key(), Node: n.Name, Existing: existing[t]}
			if a, ok := snapshot.Assignment(t, n, t.GPUs); ok { // what the daemon would write on the Binding
				p.GPUs = a.Containers[0].UUIDs
			}
			res.Placements = append(res.Placements, p)
		}
	}
	if total > 0 {
		res.AllocatedGPUPct = 100 * float64(alloc) / float64(total)
	}
	for _, j := range snap.Jobs {
		for _, t := range j.Tasks {
			if t.Status != framework.TaskPending {
				continue
			}
			pp := PendingPod{Pod: t.Key(), Reason: "Pending", Message: "no session decided about the pod"}
			if j.Pending != nil {
				pp.Reason, pp.Message = j.Pending.Code, j.Pending.Message
			}
			res.Pending = append(res.Pending, pp)
		}
	}
	res.Queues = queueUse(snap)
	slices.SortFunc(res.Placements, func(a, b Placement) int { return strings.Compare(a.Pod, b.Pod) })
	slices.SortFunc(res.Pending, func(a, b PendingPod) int { return strings.Compare(a.Pod, b.Pod) })
	return res, nil
}

// podPresent reports whether the pod made it into the snapshot despite an error (an
// ignored annotation, GPUs picked for a bad assignment).
func podPresent(snap *framework.Snapshot, key string) bool {
	for _, j := range snap.Jobs {
		for _, t := range j.Tasks {
			if t.Key() == key {
				return true
			}
		}
	}
	return false
}

// manifestsNow is the latest creation or start time in the manifests, or the Unix
// epoch when they carry none.
func manifestsNow(m *trace.Manifests) time.Time {
	now := time.Unix(0, 0).UTC()
	later := func(t time.Time) {
		if t.After(now) {
			now = t
		}
	}
	for i := range m.Pods {
		later(m.Pods[i].CreationTimestamp.Time)
		if st := m.Pods[i].Status.StartTime; st != nil {
			later(st.Time)
		}
	}
	for i := range m.PodGroups {
		later(m.PodGroups[i].CreationTimestamp.Time)
	}
	for i := range m.Jobs {
		later(m.Jobs[i].CreationTimestamp.Time)
	}
	return now
}

// WriteManifestsResult prints the placements, the pending pods and the allocation as
// aligned tables.
func WriteManifestsResult(w io.Writer, r ManifestsResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tNODE\tGPUS\tSTATE")
	for _, p := range r.Placements {
		gpus := strings.Join(p.GPUs, ",")
		if gpus == "" {
			gpus = "-"
		}
		state := "scheduled"
		if p.Existing {
			state = "running"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Pod, p.Node, gpus, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Pending) > 0 {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\nPENDING POD\tREASON\tMESSAGE")
		for _, p := range r.Pending {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Pod, p.Reason, p.Message)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, p := range r.Problems {
		if _, err := fmt.Fprintf(w, "warning: %s\n", p); err != nil {
			return err
		}
	}
	for _, n := range r.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "\nallocated GPUs: %.1f%%\n", r.AllocatedGPUPct)
	return err
}
