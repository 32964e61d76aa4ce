package crds_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/deploy/crds"
	"github.com/tessera-gpu/tessera/deploy/crds/crdstest"
)

// The objects the integration tests see the API server reject are rejected offline
// too, with the same words.
func TestInvalidObjectsRejectedOffline(t *testing.T) {
	cases := crdstest.InvalidObjects(t)
	if len(cases) < 15 {
		t.Fatalf("%d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			var obj map[string]any
			if err := yaml.Unmarshal(c.Doc, &obj); err != nil {
				t.Fatal(err)
			}
			errs := crds.DefaultAndValidate(t.Context(), obj["apiVersion"].(string), obj["kind"].(string), obj)
			if len(errs) == 0 {
				t.Fatalf("accepted; want a rejection naming %q", c.Want[0])
			}
			msg := errs.ToAggregate().Error()
			for _, w := range c.Want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not contain %q", msg, w)
				}
			}
		})
	}
}

// Valid objects pass and receive the CRD's defaults, as on the API server.
func TestDefaults(t *testing.T) {
	obj := map[string]any{"apiVersion": "tessera.dev/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "g", "namespace": "default"}, "spec": map[string]any{}}
	if errs := crds.DefaultAndValidate(t.Context(), "tessera.dev/v1alpha1", "PodGroup", obj); len(errs) > 0 {
		t.Fatal(errs)
	}
	if got := obj["spec"].(map[string]any)["minMember"]; got != int64(1) {
		t.Errorf("spec.minMember defaulted to %v (%T), want 1", got, got)
	}
	if !crds.Known("tessera.dev/v1alpha1", "Queue") || crds.Known("v1", "Pod") {
		t.Error("Known")
	}
}
