package deviceplugin

import (
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// refusals records what the plugin reports.
type refusals struct {
	mu  sync.Mutex
	got []string // reason + " " + pod name
}

func (r *refusals) add(x *Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, x.Reason+" "+x.Pod.Name)
}

func (r *refusals) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// A pod gets GPUs only from an assignment the tessera scheduler wrote when it bound the
// pod: one naming another scheduler, or whose assignment does not carry its own UID (a
// forged one: the UID is unknown until the pod is stored), is refused and reported.
func TestAllocateRefusesAssignmentsTheSchedulerDidNotWrite(t *testing.T) {
	forged := slice(gpus[0].UUID, 40960)
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		reason string
		want   string
	}{
		{"no marker", makePod("forged", 0, 1).Assignment(forged).Annotation(tesserav1.AnnotationBoundPodUID, "").Obj(),
			RefusedNotBound, "was not written by the tessera scheduler"},
		{"marker of another pod", makePod("copied", 0, 1).Assignment(forged).Annotation(tesserav1.AnnotationBoundPodUID, "uid-victim").Obj(),
			RefusedNotBound, `tessera.dev/bound-pod-uid is "uid-victim", the pod's UID is "uid-copied"`},
		{"another scheduler", makePod("elsewhere", 0, 1).Assignment(forged).SchedulerName("my-scheduler").Obj(),
			RefusedOtherScheduler, `names scheduler "my-scheduler"`},
		{"no scheduler at all", makePod("by-hand", 0, 1).Assignment(forged).SchedulerName("").Obj(),
			RefusedOtherScheduler, `names scheduler ""`},
		{"no assignment", makePod("plain", 0, 1).Obj(), RefusedNoAssignment, "has no tessera.dev/gpu-assignment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r refusals
			s := startWith(t, Options{SharesPerGPU: 1, OnRefusal: r.add}, tc.pod)
			_, err := allocate(t, s, tc.pod, gpus[1].UUID)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Allocate error = %v, want one containing %q", err, tc.want)
			}
			if got := r.list(); len(got) != 1 || got[0] != tc.reason+" "+tc.pod.Name {
				t.Fatalf("reported %v, want [%s %s]", got, tc.reason, tc.pod.Name)
			}
		})
	}
}

// A forged pod older than a pod the scheduler bound does not get the bound pod's GPUs:
// the kubelet admits the forged pod first, and that allocation is refused; the bound
// pod then gets its own.
func TestForgedPodNeverTakesABoundPodsGPUs(t *testing.T) {
	forged := makePod("forged", 0, 1).Assignment(slice(gpus[0].UUID, 1000)).Annotation(tesserav1.AnnotationBoundPodUID, "").Obj()
	bound := makePod("bound", 10, 1).Assignment(slice(gpus[1].UUID, 2000)).Obj()
	var r refusals
	s := startWith(t, Options{SharesPerGPU: 4, OnRefusal: r.add}, forged, bound)
	if resp, err := allocate(t, s, forged, gpus[0].UUID+"::0"); err == nil {
		t.Fatalf("the forged pod's allocation succeeded: %v", resp.ContainerResponses[0])
	}
	// The kubelet failed the forged pod; it is no longer pending.
	forged.Status.Phase = corev1.PodFailed
	if _, err := s.kube().CoreV1().Pods(forged.Namespace).UpdateStatus(t.Context(), forged, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := allocate(t, s, bound, gpus[0].UUID+"::1")
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.ContainerResponses[0]; !slices.Equal(cdiNames(r), []string{DefaultCDIKind + "=" + gpus[1].UUID}) || r.Envs[EnvMemoryLimitMiB] != "2000" {
		t.Fatalf("bound pod got %v", r)
	}
	if got := r.list(); len(got) != 1 || got[0] != RefusedNotBound+" forged" {
		t.Fatalf("reported %v", got)
	}
}
