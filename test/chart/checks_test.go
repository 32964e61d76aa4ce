package chart

import (
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
)

// helm lint, for every values set: no warning, no error.
func TestLint(t *testing.T) {
	for _, s := range valuesSets {
		l := lint.RunAll(chartDir, s.parse(t), namespace)
		for _, m := range l.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("%s: %s", s.name, m)
			}
		}
	}
}

// Every container of every values set, the helm test Pod's included, runs with the
// hardened securityContext and declares what it requests.
func TestContainersHardened(t *testing.T) {
	for _, s := range valuesSets {
		containers := 0
		for _, o := range render(t, s) {
			pod, ok := get(o.obj, "spec", "template", "spec").(map[string]any)
			if o.kind() == "Pod" { // the helm test Pod
				pod, ok = o.obj["spec"].(map[string]any)
			}
			if !ok {
				continue
			}
			podSC, _ := pod["securityContext"].(map[string]any)
			var cs []any
			for _, f := range []string{"initContainers", "containers"} {
				l, _ := pod[f].([]any)
				cs = append(cs, l...)
			}
			for _, c := range cs {
				c := c.(map[string]any)
				containers++
				where := s.name + ": " + o.id() + " container " + str(c, "name")
				sc, _ := c["securityContext"].(map[string]any)
				if sc == nil {
					t.Errorf("%s: no securityContext", where)
					continue
				}
				if sc["allowPrivilegeEscalation"] != false || sc["readOnlyRootFilesystem"] != true || sc["privileged"] == true {
					t.Errorf("%s: securityContext %v", where, sc)
				}
				if drop, _ := get(sc, "capabilities", "drop").([]any); !slices.Contains(drop, any("ALL")) {
					t.Errorf("%s: capabilities not all dropped: %v", where, sc["capabilities"])
				}
				if add := get(sc, "capabilities", "add"); add != nil {
					t.Errorf("%s: capabilities added: %v", where, add)
				}
				if str(sc, "seccompProfile", "type") != "RuntimeDefault" && str(podSC, "seccompProfile", "type") != "RuntimeDefault" {
					t.Errorf("%s: no RuntimeDefault seccomp profile", where)
				}
				nonRoot := sc["runAsNonRoot"] == true || (sc["runAsNonRoot"] == nil && podSC["runAsNonRoot"] == true)
				// The node agent alone runs as root, without any capability: its device
				// plugin socket lives in the kubelet's root-owned directory (the
				// DaemonSet's comment says why).
				if o.id() == "DaemonSet/tessera-node-agent" {
					nonRoot = !nonRoot
				}
				if !nonRoot {
					t.Errorf("%s: runAsNonRoot %v (pod %v)", where, sc["runAsNonRoot"], podSC["runAsNonRoot"])
				}
				for _, r := range []string{"cpu", "memory"} {
					if get(c, "resources", "requests", r) == nil {
						t.Errorf("%s: no %s request", where, r)
					}
				}
				if get(c, "resources", "limits", "memory") == nil {
					t.Errorf("%s: no memory limit", where)
				}
			}
		}
		if containers < 2 {
			t.Errorf("%s: %d containers checked", s.name, containers)
		}
	}
}

// No RBAC rule has a wildcard; Secrets appear in one Role only: the webhook's, in
// Tessera's namespace (its self-managed certificate).
func TestRBACLeastPrivilege(t *testing.T) {
	for _, s := range valuesSets {
		for _, o := range render(t, s) {
			if o.kind() != "Role" && o.kind() != "ClusterRole" {
				continue
			}
			rules, _ := o.obj["rules"].([]any)
			if len(rules) == 0 {
				t.Errorf("%s: %s has no rules", s.name, o.id())
			}
			for _, r := range rules {
				r := r.(map[string]any)
				for _, f := range []string{"apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"} {
					l, _ := r[f].([]any)
					for _, v := range l {
						if v == "*" {
							t.Errorf("%s: %s: wildcard in %s", s.name, o.id(), f)
						}
					}
				}
				res, _ := r["resources"].([]any)
				if slices.Contains(res, any("secrets")) {
					if o.id() != "Role/tessera-webhook" || str(o.obj, "metadata", "namespace") != namespace {
						t.Errorf("%s: %s (namespace %q) touches Secrets", s.name, o.id(), str(o.obj, "metadata", "namespace"))
					}
				}
			}
		}
	}
}

// The node agent is its own binary (tessera-node-agent, the cgo one, in its own image):
// its container runs it with flags only; every other container runs a subcommand of the
// tessera image's entrypoint.
func TestContainersRunTheirBinary(t *testing.T) {
	for _, s := range valuesSets {
		for _, o := range render(t, s) {
			cs, _ := get(o.obj, "spec", "template", "spec", "containers").([]any)
			for _, c := range cs {
				c := c.(map[string]any)
				where := s.name + ": " + o.id() + " container " + str(c, "name")
				command, _ := c["command"].([]any)
				args, _ := c["args"].([]any)
				if o.id() != "DaemonSet/tessera-node-agent" {
					if len(command) > 0 || len(args) == 0 || !slices.Contains([]any{"scheduler", "webhook", "autoscaler"}, args[0]) {
						t.Errorf("%s: command %v args %v, want the image's entrypoint with a tessera subcommand", where, command, args)
					}
					continue
				}
				if !slices.Equal(command, []any{"/usr/local/bin/tessera-node-agent"}) {
					t.Errorf("%s: command %v, want [/usr/local/bin/tessera-node-agent]", where, command)
				}
				for _, a := range args {
					if a, _ := a.(string); !strings.HasPrefix(a, "--") {
						t.Errorf("%s: argument %q: tessera-node-agent takes flags only (no node-agent subcommand)", where, a)
					}
				}
			}
		}
	}
}
