package chart

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tessera-gpu/tessera/test/testenv"
)

// Every values set, applied with server-side dry-run to a real API server with Tessera's
// CRDs (and stand-ins for cert-manager's and the Prometheus Operator's), so that schema,
// validation and CEL errors surface. The CRDs themselves are installed by the
// environment, from deploy/crds, which the chart's crds/ equal (TestChartCRDsInSync).
func TestDryRunAgainstAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{ExtraCRDDirs: []string{"testdata/crds"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range valuesSets {
		n := 0
		for _, o := range render(t, s) {
			if o.kind() == "CustomResourceDefinition" {
				continue
			}
			u := &unstructured.Unstructured{Object: o.obj}
			err := env.Client.Create(ctx, u, client.DryRunAll)
			if o.kind() == "Namespace" && apierrors.IsAlreadyExists(err) {
				err = nil
			}
			if err != nil {
				t.Errorf("%s: %s (%s): %v", s.name, o.id(), o.source, err)
				continue
			}
			n++
		}
		t.Logf("%s: %d objects accepted", s.name, n)
	}
}
