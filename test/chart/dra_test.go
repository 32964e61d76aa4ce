package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// draAPI is how a cluster that serves Dynamic Resource Allocation lists DeviceClasses
// among its API versions (Helm's .Capabilities.APIVersions, `--api-versions`).
const draAPI = "resource.k8s.io/v1/DeviceClass"

// draObjects are the chart's Dynamic Resource Allocation objects: Tessera's two
// DeviceClasses and the admission policies that guard claims for them.
var draObjects = []string{
	"DeviceClass/gpu.tessera.dev", "DeviceClass/gpu-share.tessera.dev",
	"ValidatingAdmissionPolicy/tessera-dra-admin-access", "ValidatingAdmissionPolicyBinding/tessera-dra-admin-access",
	"ValidatingAdmissionPolicy/tessera-dra-allocation", "ValidatingAdmissionPolicyBinding/tessera-dra-allocation",
}

// dra.enabled auto renders the DRA objects exactly where the cluster serves
// resource.k8s.io/v1 DeviceClasses; true and false force them on and off.
func TestDRAFollowsTheCluster(t *testing.T) {
	for _, c := range []struct {
		values string
		served bool
		want   bool
	}{
		{``, false, false},
		{``, true, true},
		{`dra: {enabled: auto}`, true, true},
		{`dra: {enabled: true}`, false, true},
		{`dra: {enabled: false}`, true, false},
	} {
		s := valuesSet{name: fmt.Sprintf("%q served=%v", c.values, c.served), values: c.values}
		if c.served {
			s.apiVersions = []string{draAPI}
		}
		var got []string
		for _, o := range render(t, s) {
			if slices.Contains(draObjects, o.id()) {
				got = append(got, o.id())
			}
		}
		switch {
		case c.want && len(got) != len(draObjects):
			t.Errorf("%s: rendered %v, want all of %v", s.name, got, draObjects)
		case !c.want && len(got) > 0:
			t.Errorf("%s: rendered %v, want none", s.name, got)
		}
	}
}

// The DeviceClasses select the node agent's driver; the share class only the GPUs it
// publishes as set up for sharing.
func TestDeviceClasses(t *testing.T) {
	want := map[string]string{
		"DeviceClass/gpu.tessera.dev":       `device.driver == "gpu.tessera.dev"`,
		"DeviceClass/gpu-share.tessera.dev": `device.driver == "gpu.tessera.dev" && device.attributes["gpu.tessera.dev"].sharing`,
	}
	for _, o := range render(t, valuesSet{name: "dra", values: `dra: {enabled: true}`}) {
		expr, ok := want[o.id()]
		if !ok {
			continue
		}
		delete(want, o.id())
		sels, _ := get(o.obj, "spec", "selectors").([]any)
		if len(sels) != 1 || str(sels[0].(map[string]any), "cel", "expression") != expr {
			t.Errorf("%s selectors %v, want the one CEL expression %s", o.id(), sels, expr)
		}
		if o.obj["apiVersion"] != "resource.k8s.io/v1" {
			t.Errorf("%s apiVersion %v, want resource.k8s.io/v1", o.id(), o.obj["apiVersion"])
		}
		// tessera.dev/gpu maps to whole GPUs; gpu-memory, a capacity, to no class.
		if got, want := get(o.obj, "spec", "extendedResourceName"), map[bool]any{true: "tessera.dev/gpu", false: nil}[o.id() == "DeviceClass/gpu.tessera.dev"]; got != want {
			t.Errorf("%s extendedResourceName %v, want %v", o.id(), got, want)
		}
	}
	for id := range want {
		t.Errorf("%s not rendered", id)
	}
}

// The DRA admission policies fail closed and are bound to deny. The allocation policy
// spares Tessera's scheduler alone and watches claims of Tessera's driver; the admin
// access policy asks for both namespace labels.
func TestDRAAdmissionPolicies(t *testing.T) {
	byID := map[string]object{}
	for _, o := range render(t, valuesSet{name: "dra", values: `dra: {enabled: true}`}) {
		byID[o.id()] = o
	}
	for _, c := range []struct {
		name     string
		resource []string
		mention  []string
	}{
		{"tessera-dra-admin-access", []string{"resourceclaims", "resourceclaimtemplates"},
			[]string{`'resource.kubernetes.io/admin-access'`, `'tessera.dev/platform'`, `["gpu.tessera.dev", "gpu-share.tessera.dev"]`, `contains('gpu.tessera.dev')`}},
		{"tessera-dra-allocation", []string{"resourceclaims/status"},
			[]string{"request.userInfo.username != 'system:serviceaccount:" + namespace + ":tessera-scheduler'", "r.driver == 'gpu.tessera.dev'", "status.?reservedFor", "status.?allocation"}},
	} {
		vap, ok := byID["ValidatingAdmissionPolicy/"+c.name]
		if !ok {
			t.Errorf("%s not rendered", c.name)
			continue
		}
		if str(vap.obj, "spec", "failurePolicy") != "Fail" {
			t.Errorf("%s does not fail closed", c.name)
		}
		binding := byID["ValidatingAdmissionPolicyBinding/"+c.name]
		if str(binding.obj, "spec", "policyName") != c.name || fmt.Sprint(get(binding.obj, "spec", "validationActions")) != "[Deny]" {
			t.Errorf("binding of %s: %v, want policyName %s and validationActions [Deny]", c.name, binding.obj["spec"], c.name)
		}
		rules, _ := get(vap.obj, "spec", "matchConstraints", "resourceRules").([]any)
		if len(rules) != 1 || fmt.Sprint(get(rules[0], "resources")) != fmt.Sprint(c.resource) ||
			fmt.Sprint(get(rules[0], "apiGroups")) != "[resource.k8s.io]" || fmt.Sprint(get(rules[0], "apiVersions")) != "[v1]" {
			t.Errorf("%s matches %v, want resource.k8s.io/v1 %v", c.name, rules, c.resource)
		}
		if str(vap.obj, "spec", "matchConstraints", "matchPolicy") != "Equivalent" {
			t.Errorf("%s: matchPolicy not Equivalent: requests through the beta versions would pass unchecked", c.name)
		}
		body := fmt.Sprint(vap.obj["spec"])
		for _, m := range c.mention {
			if !strings.Contains(body, m) {
				t.Errorf("%s does not check %s", c.name, m)
			}
		}
	}
}
