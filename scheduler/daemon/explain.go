package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/cache"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
	"github.com/tessera-gpu/tessera/scheduler/snapshot/workloads"
)

// Explanation says where a pod, gang or queue stands and, while it waits, why and what
// would have to change.
type Explanation struct {
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Queue string `json:"queue,omitempty"`
	// State is Running, Pending or Completed (pods and gangs), or Ready (queues).
	State string `json:"state"`
	// Pods are where each of a gang's pods runs, or that it waits.
	Pods []PodPlacement `json:"pods,omitempty"`
	// Reason and Message are the scheduler's pending reason, as in the PodGroup's
	// Scheduled condition and the pods' events.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Hint is what would have to change for it to run.
	Hint string `json:"hint,omitempty"`
	// Evicted is why the node agent evicted the pod for GPU-memory pressure (its
	// GPUMemoryPressure event), while the pod or the event is there.
	Evicted string `json:"evicted,omitempty"`
	// Queue figures (kind queue): GPUs allocated, deserved and capability ("" unlimited).
	AllocatedGPU  string   `json:"allocated_gpu,omitempty"`
	DeservedGPU   string   `json:"deserved_gpu,omitempty"`
	CapabilityGPU string   `json:"capability_gpu,omitempty"`
	PendingJobs   []string `json:"pending_jobs,omitempty"`
}

// PodPlacement is one pod's node and GPUs.
type PodPlacement struct {
	Pod  string   `json:"pod"`
	Node string   `json:"node,omitempty"`
	GPUs []string `json:"gpus,omitempty"`
	// MemoryMiB is the pod's GPU slice; 0 for whole GPUs.
	MemoryMiB int64 `json:"memory_mib,omitempty"`
}

// Explain answers for a pod ("pod", "namespace/name"), a gang ("podgroup") or a queue
// ("queue", name), from the live objects r reads: it runs one session of the given
// configuration over a snapshot of them, changing nothing in the cluster, and reports
// what the scheduler would say.
func Explain(ctx context.Context, r client.Reader, cfg scheduler.Config, kind, name string, now time.Time) (Explanation, error) {
	core, err := scheduler.New(cfg)
	if err != nil {
		return Explanation{}, err
	}
	var served []workloads.Kind
	var dra bool
	if m, ok := r.(interface{ RESTMapper() meta.RESTMapper }); ok { // a client.Client
		served, dra = cache.ServedWorkloads(m.RESTMapper()), cache.ServesDRA(m.RESTMapper())
	}
	snap, state, errs, err := cache.New(r, snapshot.Options{WholeGPUs: cfg.WholeGPUs, Workloads: served, DRA: dra}).Snapshot(ctx, now)
	if err != nil {
		return Explanation{}, err
	}
	core.RunSession(snap)
	switch kind {
	case "pod", "pods", "po":
		e, err := explainPod(snap, state, errs, name)
		return withPressureEviction(ctx, r, state, e, name, err)
	case "podgroup", "podgroups", "pg":
		return explainGroup(snap, state, name)
	case "queue", "queues", "tq":
		return explainQueue(snap, name)
	}
	return Explanation{}, fmt.Errorf("unknown kind %q; explain pod NS/NAME, podgroup NS/NAME or queue NAME", kind)
}

func splitName(kind, name string) (string, string, error) {
	ns, n, ok := strings.Cut(name, "/")
	if !ok || ns == "" || n == "" {
		return "", "", fmt.Errorf("%s %q: give it as NAMESPACE/NAME", kind, name)
	}
	return ns, n, nil
}

func explainPod(snap *framework.Snapshot, state *cache.State, errs []error, name string) (Explanation, error) {
	ns, n, err := splitName("pod", name)
	if err != nil {
		return Explanation{}, err
	}
	for _, j := range snap.Jobs {
		for _, t := range j.Tasks {
			if t.Namespace == ns && t.Name == n {
				e := explainJob(j, state, "Pod", name)
				e.Pods = slices.DeleteFunc(e.Pods, func(p PodPlacement) bool { return p.Pod != name })
				return e, nil
			}
		}
	}
	for _, p := range state.Pods {
		if p.Namespace == ns && p.Name == n {
			if e, ok := leftOut(errs, "Pod", ns, n); ok {
				return Explanation{Kind: "Pod", Name: name, State: string(p.Status.Phase), Reason: ReasonLeftOut,
					Message: e.Error(), Hint: "fix what the message names; the scheduler reads the pod again when it or what it names changes"}, nil
			}
			return Explanation{Kind: "Pod", Name: name, State: string(p.Status.Phase),
				Message: fmt.Sprintf("spec.schedulerName is %q: another scheduler places this pod", p.Spec.SchedulerName)}, nil
		}
	}
	return Explanation{}, fmt.Errorf("pod %s not found", name)
}

// withPressureEviction adds to the explanation e of pod name (namespace/name) the node
// agent's GPU-memory pressure eviction of it, from its latest GPUMemoryPressure event: of
// the pod with its UID while it is there, of any pod of that name once it is gone
// (explained then as Evicted). Events that cannot be read leave e as it is.
func withPressureEviction(ctx context.Context, r client.Reader, state *cache.State, e Explanation, name string, err error) (Explanation, error) {
	ns, n, splitErr := splitName("pod", name)
	if splitErr != nil {
		return e, err
	}
	var uid types.UID
	for _, p := range state.Pods {
		if p.Namespace == ns && p.Name == n {
			uid = p.UID
		}
	}
	var events corev1.EventList
	if r.List(ctx, &events, client.InNamespace(ns),
		client.MatchingFields{"involvedObject.name": n, "reason": tesserav1.EventReasonGPUMemoryPressure}) != nil {
		return e, err
	}
	var latest *corev1.Event
	for i := range events.Items {
		ev := &events.Items[i]
		if ev.InvolvedObject.Kind == "Pod" && (uid == "" || ev.InvolvedObject.UID == uid) && (latest == nil || eventTime(ev).After(eventTime(latest))) {
			latest = ev
		}
	}
	switch {
	case latest == nil:
		return e, err
	case err != nil && uid == "": // gone
		return Explanation{Kind: "Pod", Name: name, State: "Evicted", Reason: tesserav1.EventReasonGPUMemoryPressure, Message: latest.Message,
			Hint: "the pod used more GPU memory than its request when its GPU ran short; its workload runs it again. Raise its tessera.dev/gpu-memory request, " +
				"or set its limit equal to its request to never be evicted this way"}, nil
	case err != nil:
		return e, err
	}
	e.Evicted = tesserav1.EventReasonGPUMemoryPressure + ": " + latest.Message
	return e, nil
}

// eventTime is when an event last happened.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// ReasonLeftOut is the reason of a pod that the scheduler cannot read as it is: a
// request it cannot honour, a resource claim or device class that does not exist yet.
const ReasonLeftOut = "LeftOut"

// leftOut finds the error that left an object out of the snapshot.
func leftOut(errs []error, kind, namespace, name string) (error, bool) {
	for _, err := range errs {
		var oe *snapshot.ObjectError
		if errors.As(err, &oe) && oe.Kind == kind && oe.Namespace == namespace && oe.Name == name {
			return err, true
		}
	}
	return nil, false
}

func explainGroup(snap *framework.Snapshot, state *cache.State, name string) (Explanation, error) {
	ns, n, err := splitName("podgroup", name)
	if err != nil {
		return Explanation{}, err
	}
	for _, j := range snap.Jobs {
		if j.Namespace == ns && j.Name == n {
			return explainJob(j, state, "PodGroup", name), nil
		}
	}
	if pg := state.PodGroups[name]; pg != nil {
		return Explanation{Kind: "PodGroup", Name: name, Queue: pg.Spec.Queue, State: "Pending", Reason: framework.ReasonGangPodsMissing,
			Message: fmt.Sprintf("0 of %d pods exist", pg.Spec.MinMember), Hint: "create the gang's pods (with the " + tesserav1.LabelPodGroup + " label)"}, nil
	}
	return Explanation{}, fmt.Errorf("podgroup %s not found", name)
}

func explainJob(j *framework.Job, state *cache.State, kind, name string) Explanation {
	e := Explanation{Kind: kind, Name: name, State: "Pending"}
	if j.Queue != nil {
		e.Queue = j.Queue.Name
	}
	switch {
	case j.Count(framework.TaskSucceeded) == len(j.Tasks):
		e.State = "Completed"
	case j.Count(framework.TaskRunning, framework.TaskReleasing) >= max(j.MinMember, 1):
		e.State = "Running"
	}
	for _, t := range j.Tasks {
		p := PodPlacement{Pod: t.Key()}
		if t.Status == framework.TaskRunning || t.Status == framework.TaskReleasing {
			p.Node = t.Node.Name
			if pod := state.Pods[types.UID(t.UID)]; pod != nil {
				if a, err := tesserav1.ParseGPUAssignment(pod.Annotations[tesserav1.AnnotationGPUAssign]); err == nil {
					if c, ok := a.Container(t.Container); ok {
						p.GPUs, p.MemoryMiB = c.UUIDs, c.MemoryMiB
					}
				}
			}
		}
		e.Pods = append(e.Pods, p)
	}
	if j.Pending != nil && e.State != "Completed" {
		e.Reason, e.Message = j.Pending.Code, j.Pending.Message
		e.Hint = hint(j)
	} else if e.State == "Pending" {
		e.Message = "fits now: the scheduler binds it in its next session"
	}
	return e
}

// hint says what would have to change for a pending job to run.
func hint(j *framework.Job) string {
	q := "its queue"
	if j.Queue != nil {
		q = "queue " + j.Queue.Name
	}
	switch j.Pending.Code {
	case framework.ReasonNotEnqueued, framework.ReasonQueueCapability:
		return "raise the capability of " + q + ", or wait for its running jobs to finish"
	case framework.ReasonGangPodsMissing:
		return "the gang's other pods must be created (check its Job or controller)"
	case framework.ReasonClusterTooSmall:
		return "more GPU nodes (a cluster autoscaler adds them for these pods), or a smaller gang"
	case framework.ReasonGangIncomplete:
		return fmt.Sprintf("free capacity for %d pods together (smaller jobs finishing, more nodes), or lower minMember", max(j.MinMember, 1))
	case framework.ReasonTopology:
		return "free capacity inside one topology domain, or drop spec.topology.required"
	case framework.ReasonUnschedulable:
		return "free capacity on a node that matches the pod, or relax its node selector, tolerations or GPU model"
	case framework.ReasonReserved:
		return "wait: nodes are held for a gang that has waited longer"
	case framework.ReasonWaitingInLine:
		return "wait: a job ahead of it in " + q + " goes first"
	case framework.ReasonQueueNotFound, framework.ReasonQueueRefused:
		return "name a queue that exists and takes the job's namespace and priority class (tessera.dev/queue label, PodGroup spec.queue or the namespace's default), or ask the platform team to create or widen one"
	}
	return ""
}

func explainQueue(snap *framework.Snapshot, name string) (Explanation, error) {
	for _, q := range snap.Queues {
		if q.Name != name {
			continue
		}
		e := Explanation{Kind: "Queue", Name: name, State: "Ready", AllocatedGPU: framework.FormatGPU(q.Allocated.GPU), DeservedGPU: framework.FormatGPU(q.Deserved.GPU)}
		if q.Capability.GPU < framework.Unlimited.GPU {
			e.CapabilityGPU = framework.FormatGPU(q.Capability.GPU)
		}
		for _, j := range snap.Jobs {
			if j.Queue == q && j.Count(framework.TaskPending) > 0 && j.Pending != nil {
				e.PendingJobs = append(e.PendingJobs, j.Key()+": "+j.Pending.String())
			}
		}
		return e, nil
	}
	return Explanation{}, fmt.Errorf("queue %s not found", name)
}

// WriteText prints an explanation for people.
func (e Explanation) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s", e.Kind, e.Name, e.State)
	if e.Queue != "" {
		fmt.Fprintf(&b, " (queue %s)", e.Queue)
	}
	b.WriteString("\n")
	if e.Kind == "Queue" {
		capability := e.CapabilityGPU
		if capability == "" {
			capability = "unlimited"
		}
		fmt.Fprintf(&b, "  GPUs allocated %s, deserved %s, capability %s\n", e.AllocatedGPU, e.DeservedGPU, capability)
		for _, p := range e.PendingJobs {
			fmt.Fprintf(&b, "  pending %s\n", p)
		}
	}
	for _, p := range e.Pods {
		switch {
		case p.Node == "":
			fmt.Fprintf(&b, "  %s: pending\n", p.Pod)
		case p.MemoryMiB > 0:
			fmt.Fprintf(&b, "  %s: on %s, %d MiB of GPU %s\n", p.Pod, p.Node, p.MemoryMiB, strings.Join(p.GPUs, ","))
		case len(p.GPUs) > 0:
			fmt.Fprintf(&b, "  %s: on %s, GPUs %s\n", p.Pod, p.Node, strings.Join(p.GPUs, ","))
		default:
			fmt.Fprintf(&b, "  %s: on %s\n", p.Pod, p.Node)
		}
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, "  why: %s: %s\n", e.Reason, e.Message)
	} else if e.Message != "" {
		fmt.Fprintf(&b, "  %s\n", e.Message)
	}
	if e.Evicted != "" {
		fmt.Fprintf(&b, "  evicted: %s\n", e.Evicted)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "  to run: %s\n", e.Hint)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
