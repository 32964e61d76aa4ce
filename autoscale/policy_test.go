package autoscale

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// A ScaleDownPolicy's underusedGPUPercent turns on the Underused method, the same the
// simulator's --underused-share does: 50 when unset, 0 keeps empty nodes only.
func TestPolicyUnderusedGPUPercent(t *testing.T) {
	p := &tesserav1.ScaleDownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	pol, err := PolicyFrom(p)
	if err != nil || pol.UnderusedShare != 0.5 || pol.IdleAfter != DefaultIdleAfter {
		t.Fatalf("defaults: %+v, %v; want the Underused method at 0.5", pol, err)
	}
	ms := NewPlanner(pol, nil).Methods
	if len(ms) != 2 || ms[1] != (Underused{Share: 0.5}) {
		t.Errorf("methods %v, want Empty and Underused at 0.5", ms)
	}
	p.Spec.UnderusedGPUPercent = ptr(0)
	if pol, err = PolicyFrom(p); err != nil || pol.UnderusedShare != 0 || len(NewPlanner(pol, nil).Methods) != 1 {
		t.Fatalf("0%%: %+v, %v; want empty nodes only", pol, err)
	}
	p.Spec.UnderusedGPUPercent = ptr(150)
	if _, err := PolicyFrom(p); err == nil || !strings.Contains(err.Error(), "spec.underusedGPUPercent") {
		t.Errorf("150%%: %v, want an error naming the field", err)
	}
}

func ptr(v int32) *int32 { return &v }

// minNodes keeps one node when unset, so that a pool never empties where a cluster
// autoscaler cannot grow it from zero; 0 stated lets it empty.
func TestPolicyMinNodesDefault(t *testing.T) {
	p := &tesserav1.ScaleDownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if pol, err := PolicyFrom(p); err != nil || pol.MinNodes != 1 {
		t.Fatalf("unset: minNodes %d, %v; want 1", pol.MinNodes, err)
	}
	p.Spec.MinNodes = ptr(0)
	if pol, err := PolicyFrom(p); err != nil || pol.MinNodes != 0 {
		t.Fatalf("0: minNodes %d, %v; want 0", pol.MinNodes, err)
	}
}

// surplusAfter and bootTime default to 1m and 5m; a surplusAfter of 0 or a negative
// bootTime is refused with the field named.
func TestPolicyHeadroomFields(t *testing.T) {
	p := &tesserav1.ScaleDownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if pol, err := PolicyFrom(p); err != nil || pol.SurplusAfter != time.Minute || pol.BootTime != 5*time.Minute {
		t.Fatalf("defaults: %+v, %v; want surplusAfter 1m, bootTime 5m", pol, err)
	}
	p.Spec.SurplusAfter = &metav1.Duration{}
	if _, err := PolicyFrom(p); err == nil || !strings.Contains(err.Error(), "spec.surplusAfter") {
		t.Errorf("surplusAfter 0: %v, want an error naming the field", err)
	}
	p.Spec.SurplusAfter, p.Spec.BootTime = nil, &metav1.Duration{Duration: -time.Minute}
	if _, err := PolicyFrom(p); err == nil || !strings.Contains(err.Error(), "spec.bootTime") {
		t.Errorf("bootTime -1m: %v, want an error naming the field", err)
	}
}
