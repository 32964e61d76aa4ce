package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	chartDir  = "../../deploy/helm/tessera"
	namespace = "tessera-system"
)

// valuesSet is one way to install the chart, each rendered, linted, checked and applied
// with server-side dry-run.
type valuesSet struct {
	name   string
	values string
	// want are kinds/names the rendering must hold; absent ones it must not.
	want, absent []string
	// apiVersions are served by the cluster besides Helm's defaults (Options.APIVersions).
	apiVersions []string
}

var valuesSets = []valuesSet{
	{name: "defaults",
		want:   []string{"Deployment/tessera-scheduler", "Deployment/tessera-webhook", "DaemonSet/tessera-node-agent", "Deployment/tessera-autoscaler", "ClusterRole/tessera-autoscaler", "PodDisruptionBudget/tessera-webhook", "Role/tessera-webhook", "ConfigMap/tessera-dashboard", "PriorityClass/batch-normal"},
		absent: []string{"ServiceMonitor/tessera", "Certificate/tessera-webhook", "Namespace/tessera-system", "DeviceClass/gpu.tessera.dev"}},
	{name: "ha", values: `
scheduler: {replicas: 3, podDisruptionBudget: {enabled: true, minAvailable: 2}}
webhook: {replicas: 3, podDisruptionBudget: {enabled: true, minAvailable: 2}, excludeNamespaces: [monitoring]}
autoscaler: {enabled: true}
monitoring:
  serviceMonitor: {enabled: true, labels: {release: prometheus}}
  podMonitor: {enabled: true}
  prometheusRule: {enabled: true}
`, want: []string{"Deployment/tessera-autoscaler", "ClusterRole/tessera-autoscaler", "PodDisruptionBudget/tessera-autoscaler", "ServiceMonitor/tessera", "PodMonitor/tessera-node-agent", "PrometheusRule/tessera"}},
	{name: "no-node-agent", values: `
nodeAgent: {enabled: false}
scheduler: {replicas: 1}
monitoring: {podMonitor: {enabled: true}, dashboard: {enabled: false}}
`, want: []string{"Deployment/tessera-scheduler"},
		absent: []string{"DaemonSet/tessera-node-agent", "ClusterRole/tessera-node-agent", "PodMonitor/tessera-node-agent", "PodDisruptionBudget/tessera-scheduler", "ConfigMap/tessera-dashboard"}},
	{name: "cert-manager", values: `
webhook: {certManager: {enabled: true}}
scheduler: {config: "actions: [enqueue, allocate]\n"}
`, want: []string{"Issuer/tessera-selfsigned", "Certificate/tessera-webhook", "ConfigMap/tessera-scheduler-config"},
		absent: []string{"Role/tessera-webhook"}},
	{name: "cert-manager-cluster-issuer", values: `
webhook: {certManager: {enabled: true, issuerRef: {kind: ClusterIssuer, name: corp-ca}}}
namespace: {create: true}
`, want: []string{"Certificate/tessera-webhook", "Namespace/tessera-system"},
		absent: []string{"Issuer/tessera-selfsigned"}},
	{name: "openshift-tenants", values: `
podAnnotations: {example.com/owner: platform}
podLabels: {team: platform}
scheduler: {podSecurityContext: {runAsUser: null, runAsGroup: null}, topologySpreadConstraints: [], podLabels: {tier: control}}
webhook: {podSecurityContext: {runAsUser: null, runAsGroup: null}, allowedSchedulers: [volcano]}
autoscaler: {podSecurityContext: {runAsUser: null, runAsGroup: null}}
tests: {podSecurityContext: {runAsUser: null, runAsGroup: null}}
tenantRole: {create: true}
`, want: []string{"ClusterRole/tessera-tenant", "Pod/tessera-test", "Role/tessera-test"}},
	{name: "dra", values: `tenantRole: {create: true}`, apiVersions: []string{draAPI},
		want: draObjects},
}

// testImages are the images of every values set that names none of its own: the chart
// renders nothing without them (TestImagesRequired).
const testImages = `
image: {repository: registry.example.com/tessera/tessera, tag: "1.0.0"}
nodeAgent: {image: {repository: registry.example.com/tessera/tessera-node-agent}}
`

// parse returns the set's values, with testImages where it sets no image.
func (s valuesSet) parse(t testing.TB) map[string]any {
	t.Helper()
	v, images := map[string]any{}, map[string]any{}
	if err := yaml.Unmarshal([]byte(s.values), &v); err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	if err := yaml.Unmarshal([]byte(testImages), &images); err != nil {
		t.Fatal(err)
	}
	fillIn(v, images)
	return v
}

// fillIn sets the keys of src that dst lacks, in nested maps too.
func fillIn(dst, src map[string]any) {
	for k, sv := range src {
		dv, ok := dst[k]
		if !ok {
			dst[k] = sv
			continue
		}
		dm, dok := dv.(map[string]any)
		sm, sok := sv.(map[string]any)
		if dok && sok {
			fillIn(dm, sm)
		}
	}
}

// object is one rendered document.
type object struct {
	source string // template path
	raw    string
	obj    map[string]any
}

func (o object) kind() string { return str(o.obj, "kind") }
func (o object) name() string { return str(o.obj, "metadata", "name") }
func (o object) id() string   { return o.kind() + "/" + o.name() }

func render(t testing.TB, s valuesSet) []object {
	t.Helper()
	ms, err := Render(chartDir, Options{Namespace: namespace, Values: s.parse(t), APIVersions: s.apiVersions})
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	var objs []object
	for _, m := range ms {
		for _, d := range m.Docs {
			var o map[string]any
			if err := yaml.UnmarshalStrict([]byte(d), &o); err != nil {
				t.Fatalf("%s: %s: %v\n%s", s.name, m.Path, err, d)
			}
			objs = append(objs, object{source: m.Path, raw: d, obj: o})
		}
	}
	return objs
}

func str(m map[string]any, path ...string) string {
	v, _ := get(m, path...).(string)
	return v
}

func get(m any, path ...string) any {
	for _, p := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[p]
	}
	return m
}

func TestValuesSetsRender(t *testing.T) {
	for _, s := range valuesSets {
		t.Run(s.name, func(t *testing.T) {
			seen := map[string]bool{}
			for _, o := range render(t, s) {
				if seen[o.id()] {
					t.Errorf("%s rendered twice", o.id())
				}
				seen[o.id()] = true
			}
			for _, w := range s.want {
				if !seen[w] {
					t.Errorf("%s missing", w)
				}
			}
			for _, a := range s.absent {
				if seen[a] {
					t.Errorf("%s rendered, want absent", a)
				}
			}
		})
	}
}

// Bad values fail with the field named.
func TestSchemaNamesTheBadField(t *testing.T) {
	for _, c := range []struct{ values, field string }{
		{`scheduler: {replicas: two}`, "replicas"},
		{`webhook: {mutating: {failurePolicy: Sometimes}}`, "failurePolicy"},
		{`webhook: {validating: {timeoutSeconds: 60}}`, "timeoutSeconds"},
		{`nodeAgent: {sharesPerGpu: 2}`, "sharesPerGpu"},
		{`scheduler: {period: soon}`, "period"},
		{`nodeAgent: {resources: {requests: {memory: lots}}}`, "memory"},
		{`image: {pullPolicy: Sometimes}`, "pullPolicy"},
		{`webhook: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: Sometimes}]}`, "whenUnsatisfiable"},
		{`scheduler: {podLabels: {tier: 3}}`, "tier"},
		{`tenantRole: {create: "yes"}`, "create"},
		{`dra: {enabled: maybe}`, "enabled"},
	} {
		s := valuesSet{name: c.values, values: c.values}
		_, err := Render(chartDir, Options{Namespace: namespace, Values: s.parse(t)})
		if err == nil {
			t.Errorf("%s: rendered, want a schema error", c.values)
			continue
		}
		if !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: error does not name %s: %v", c.values, c.field, err)
		}
	}
}

// The chart's CRDs are deploy/crds (make generate copies them).
func TestChartCRDsInSync(t *testing.T) {
	src, _ := filepath.Glob("../../deploy/crds/tessera.dev_*.yaml")
	dst, _ := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
	if len(src) == 0 || len(src) != len(dst) {
		t.Fatalf("deploy/crds has %d CRDs, the chart %d: run make generate", len(src), len(dst))
	}
	for _, f := range src {
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(chartDir, "crds", filepath.Base(f)))
		if err != nil || string(a) != string(b) {
			t.Errorf("%s differs in the chart (%v): run make generate", filepath.Base(f), err)
		}
	}
}
