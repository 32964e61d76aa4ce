package deviceplugin

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// BenchmarkFindCandidate matches an Allocate against a full node: 110 pods (the
// kubelet's default maximum), half of them pending with a slice assignment, of which
// the kubelet has received the youngest.
func BenchmarkFindCandidate(b *testing.B) {
	pods := make([]corev1.Pod, 0, 110)
	known := map[types.UID]bool{}
	for i := range 110 {
		p := makePod(fmt.Sprintf("p-%03d", i), i, 1).Assignment(slice(gpus[i%2].UUID, 1024))
		if i%2 == 0 {
			p.Phase(corev1.PodRunning)
		}
		pod := p.Obj()
		if i%2 == 0 || i == 109 {
			known[pod.UID] = true
		}
		pods = append(pods, *pod)
	}
	v := view{allocated: map[containerKey]bool{}, known: known, granted: grants{}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := findCandidate(pods, node, "tessera.dev/gpu", request{count: 1, deviceIDs: []string{gpus[1].UUID}}, v, tesserav1.SchedulerName); err != nil {
			b.Fatal(err)
		}
	}
}
