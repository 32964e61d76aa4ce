package e2e

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The provider's CRDs parse, carry the contract label, and only FakeMachine has a
// status subresource.
func TestFakeInfraCRDs(t *testing.T) {
	docs := strings.Split(fakeInfraCRDs, "---\n")
	if len(docs) != 2 {
		t.Fatalf("%d CRDs", len(docs))
	}
	for i, want := range []string{"fakemachines.infrastructure.e2e.tessera.dev", "fakemachinetemplates.infrastructure.e2e.tessera.dev"} {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict([]byte(docs[i]), &crd); err != nil {
			t.Fatalf("%s: %v\n%s", want, err, docs[i])
		}
		if crd.Name != want || crd.Labels["cluster.x-k8s.io/v1beta2"] != "v1beta1" {
			t.Fatalf("CRD %s labels %v, want %s with the contract label", crd.Name, crd.Labels, want)
		}
		if hasStatus := crd.Spec.Versions[0].Subresources != nil; hasStatus != (i == 0) {
			t.Fatalf("%s: status subresource %t", want, hasStatus)
		}
	}
}
