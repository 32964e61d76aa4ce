package gitops_test

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/gitops"
)

// TestArgoCDHealthChecks runs each kind's Lua health check on healthy, progressing and
// degraded objects.
func TestArgoCDHealthChecks(t *testing.T) {
	for _, tc := range []struct {
		kind, object, status, message string
	}{
		{"Queue", `metadata: {generation: 2}
status: {observedGeneration: 2, conditions: [{type: Ready, status: "True", message: the scheduler serves the queue}]}`, "Healthy", "serves"},
		{"Queue", `metadata: {generation: 3}
status: {observedGeneration: 2, conditions: [{type: Ready, status: "True"}]}`, "Progressing", "latest spec"},
		{"Queue", `metadata: {generation: 1}`, "Progressing", "waiting"},
		{"Queue", `metadata: {generation: 1}
status: {observedGeneration: 1, conditions: [{type: Ready, status: "False", message: parent missing}]}`, "Degraded", "parent missing"},
		{"PodGroup", `metadata: {generation: 1}
status: {phase: Running}`, "Healthy", "Running"},
		{"PodGroup", `metadata: {generation: 1}
status: {phase: Inqueue, conditions: [{type: Scheduled, status: "False", message: "2 of 4 pods exist"}]}`, "Progressing", "2 of 4 pods exist"},
		{"PodGroup", `metadata: {generation: 1}
status: {phase: Failed}`, "Degraded", "Failed"},
		{"AdmissionPolicy", `metadata: {generation: 4}
status: {observedGeneration: 4, compiled: true, conditions: [{type: Ready, status: "True", message: compiled}]}`, "Healthy", "compiled"},
		{"AdmissionPolicy", `metadata: {generation: 5}
status: {observedGeneration: 5, compiled: false, errors: ["policy.rego:3: rego_parse_error"], conditions: [{type: Ready, status: "False"}]}`, "Degraded", "rego_parse_error"},
		{"AdmissionPolicy", `metadata: {generation: 5}
status: {observedGeneration: 4}`, "Progressing", "latest spec"},
		{"ScaleDownPolicy", `metadata: {generation: 1}
status: {observedGeneration: 1, conditions: [{type: Ready, status: "True", message: watching 10 nodes}]}`, "Healthy", "10 nodes"},
		{"ScaleDownPolicy", `metadata: {generation: 1}
status: {observedGeneration: 1, conditions: [{type: Ready, status: "False", message: no Cluster API}]}`, "Degraded", "no Cluster API"},
		{"ScaleDownPolicy", `metadata: {generation: 1}`, "Progressing", "waiting"},
	} {
		js, err := yaml.YAMLToJSON([]byte(tc.object))
		if err != nil {
			t.Fatal(err)
		}
		h, err := gitops.HealthCheck("argocd/health", tc.kind, js)
		if err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		if h.Status != tc.status || !strings.Contains(h.Message, tc.message) {
			t.Errorf("%s %s: got %+v, want %s containing %q", tc.kind, tc.object, h, tc.status, tc.message)
		}
	}
}

// TestHealthChecksRegistered: argocd/kustomization.yaml registers, for each kind, the
// script the tests run.
func TestHealthChecksRegistered(t *testing.T) {
	b, err := os.ReadFile("argocd/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for kind, script := range gitops.HealthScripts {
		if line := "resource.customizations.health.tessera.dev_" + kind + "=health/" + script; !strings.Contains(string(b), line) {
			t.Errorf("argocd/kustomization.yaml lacks %s", line)
		}
	}
}
