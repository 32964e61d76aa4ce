package recommender

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/rightsize"
)

func TestCheckpointKeepsTheRecommendation(t *testing.T) {
	c := rightsize.Config{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var p rightsize.Profile
	var s tesserav1.GPUProfileStatus
	// Forty runs over 40 weeks, through a checkpoint after each: the weights stay small
	// however long the history, and the checkpointed profile recommends as the one kept
	// in memory.
	for i := range 40 {
		at := t0.Add(time.Duration(i) * 7 * 24 * time.Hour).Add(1500 * time.Millisecond)
		run := rightsize.Run{PeakMiB: int64(10000 + 500*(i%7)), FirstMiB: 1000, GPUMiB: 81920, End: at}
		p.Record(run, c)
		q := fromStatus(s)
		q.Record(run, c)
		toStatus(q, at, rightsize.DefaultConfig().HalfLife, &s)
		restored := fromStatus(s)
		if want, got := p.Recommend(81920, c), restored.Recommend(81920, c); want != got {
			t.Fatalf("run %d: checkpointed %+v, in memory %+v", i, got, want)
		}
	}
	if s.Runs != 40 || s.MaxPeakMiB != 13000 || !s.Reference.Time.Equal(t0.Add(39*7*24*time.Hour).Add(time.Second)) {
		t.Fatalf("status %+v", s)
	}
	for _, b := range s.Peaks {
		if b.WeightMicros <= 0 || b.WeightMicros > 40e6 {
			t.Fatalf("bucket %+v", b)
		}
	}
}

func TestFailures(t *testing.T) {
	term := func(code int32, msg string) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: code, Message: msg}
	}
	for _, tc := range []struct {
		name   string
		pod    corev1.PodStatus
		msg    string
		failed bool
	}{
		{"succeeded", corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: term(0, "done")}}}}, "", false},
		{"failed without message", corev1.PodStatus{Phase: corev1.PodFailed}, "", true},
		{"failed container", corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: term(1, "CUDA out of memory")}}}}, "CUDA out of memory", true},
		{"restarted after a failure", corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{
			{State: corev1.ContainerState{Terminated: term(0, "")}, LastTerminationState: corev1.ContainerState{Terminated: term(1, "RESOURCE_EXHAUSTED: Out of memory")}}}}, "RESOURCE_EXHAUSTED: Out of memory", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, failed := failures(&corev1.Pod{Status: tc.pod})
			if msg != tc.msg || failed != tc.failed {
				t.Fatalf("failures = %q, %v; want %q, %v", msg, failed, tc.msg, tc.failed)
			}
		})
	}
}
