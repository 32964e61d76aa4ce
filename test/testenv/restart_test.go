package testenv_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tessera-gpu/tessera/test/testenv"
)

// TestRestartControlPlane: etcd and then kube-apiserver killed and started again keep
// what was written before, and the same client goes on working.
func TestRestartControlPlane(t *testing.T) {
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	ctx := testenv.Context(t, 2*time.Minute)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	for _, component := range []string{"etcd", "kube-apiserver"} {
		if err := env.Restart(ctx, component, 500*time.Millisecond); err != nil {
			t.Fatalf("restart %s: %v", component, err)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}); err != nil {
			t.Fatalf("after restarting %s: %v", component, err)
		}
	}
	if err := env.Kill("etcd"); err != nil {
		t.Fatal(err)
	}
	if err := env.Revive(ctx, "etcd"); err != nil {
		t.Fatal(err)
	}
}
