package deviceplugin

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// BenchmarkFindCandidate matches an Allocate against a full node: 110 pods (the
// kubelet's default maximum), half of them pending with a slice assignment.
func BenchmarkFindCandidate(b *testing.B) {
	pods := make([]corev1.Pod, 0, 110)
	for i := range 110 {
		p := makePod(fmt.Sprintf("p-%03d", i), i, 1).Assignment(slice(gpus[i%2].UUID, 1024))
		if i%2 == 0 {
			p.Phase(corev1.PodRunning)
		}
		pods = append(pods, *p.Obj())
	}
	allocated := map[containerKey]bool{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := findCandidate(pods, node, "tessera.dev/gpu", 1, allocated, tesserav1.SchedulerName); err != nil {
			b.Fatal(err)
		}
	}
}
