package sim

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/sim/trace"
)

type denial string

func (d denial) Error() string         { return string(d) }
func (d denial) DenialMessage() string { return string(d) }

// labelAdmitter stands in for the webhooks in AdmitManifests' bookkeeping test: it
// labels what it admits, denies objects named "bad", and fails on "broken".
type labelAdmitter struct{ seen []string }

func (a *labelAdmitter) Admit(_ context.Context, obj runtime.Object) ([]string, error) {
	m := obj.(metav1.Object)
	a.seen = append(a.seen, m.GetName())
	switch m.GetName() {
	case "bad":
		return []string{"looked twice"}, denial("no bad objects")
	case "broken":
		return nil, errors.New("policy engine down")
	}
	m.SetLabels(map[string]string{"admitted": "yes"})
	return nil, nil
}

func TestAdmitManifests(t *testing.T) {
	pod := func(name, node string) corev1.Pod { return *apitest.MakePod(name, "ns").NodeName(node).Obj() }
	m := &trace.Manifests{
		Queues: []tesserav1.Queue{*apitest.MakeQueue("q").Obj()},
		Pods:   []corev1.Pod{pod("good", ""), pod("bad", ""), pod("running", "n1")},
	}
	a := &labelAdmitter{}
	out, res, err := AdmitManifests(context.Background(), m, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.seen) != 3 || a.seen[0] != "q" {
		t.Errorf("admitted %v; want the queue first and no bound pod", a.seen)
	}
	if len(out.Pods) != 2 || out.Pods[0].Labels["admitted"] != "yes" || out.Pods[1].Name != "running" || out.Pods[1].Labels != nil {
		t.Errorf("admitted pods %+v", out.Pods)
	}
	if len(res.Denied) != 1 || res.Denied[0] != (Denial{Object: "Pod ns/bad", Message: "no bad objects"}) ||
		len(res.Warnings) != 1 || res.Warnings[0] != "Pod ns/bad: looked twice" {
		t.Errorf("result %+v", res)
	}
	if m.Pods[0].Labels != nil || len(m.Pods) != 3 {
		t.Error("the input manifests were changed")
	}
	m.Pods = append(m.Pods, pod("broken", ""))
	if _, _, err := AdmitManifests(context.Background(), m, a); err == nil {
		t.Error("an admission failure that is no denial passed")
	}
}
