package nodeagent

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The device plugins leave tessera.dev/gpu to the claims the scheduler makes only while
// the agent is the DRA driver: when told so (on), or (auto) on a kubelet whose
// DRAExtendedResource is always on.
func TestClaimsCarryGPUs(t *testing.T) {
	for _, tc := range []struct {
		mode, dra, kubelet string
		want               bool
	}{
		{mode: "", dra: DRAOn, kubelet: "v1.37.0"},
		{mode: DRAOff, dra: DRAOn, kubelet: "v1.37.0"},
		{mode: DRAOn, dra: DRAOff, kubelet: "v1.37.0"},
		{mode: DRAOn, dra: DRAOn, kubelet: "v1.35.1", want: true},
		{mode: DRAAuto, dra: DRAOn, kubelet: "v1.36.3"},
		{mode: DRAAuto, dra: DRAOn, kubelet: "v1.37.0", want: true},
		{mode: DRAAuto, dra: DRAOn, kubelet: "v1.38.0-alpha.1", want: true},
		{mode: DRAAuto, dra: DRAOff, kubelet: "v1.37.0"},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: tc.kubelet}}}
		a, err := New(Config{NodeName: "n1", DevicePluginDir: t.TempDir(), DRA: tc.dra, ExtendedResourceClaims: tc.mode},
			Deps{Kube: fake.NewClientset(node), Registry: prometheus.NewPedanticRegistry(), Log: logr.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		if got := a.claimsCarryGPUs(context.Background()); got != tc.want {
			t.Errorf("mode %q, DRA %s, kubelet %s: claims carry GPUs %v, want %v", tc.mode, tc.dra, tc.kubelet, got, tc.want)
		}
	}
	if _, err := New(Config{NodeName: "n1", ExtendedResourceClaims: "always"}, Deps{Kube: fake.NewClientset(), Registry: prometheus.NewPedanticRegistry()}); err == nil {
		t.Error("mode always accepted")
	}
}
