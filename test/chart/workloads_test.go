package chart

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// workloadIDs are the Deployments and the DaemonSet of the default values.
var workloadIDs = []string{"Deployment/tessera-scheduler", "Deployment/tessera-webhook", "Deployment/tessera-autoscaler", "DaemonSet/tessera-node-agent"}

// workloads renders values and returns the pod template spec and metadata of every
// Deployment and DaemonSet, by kind/name.
func workloads(t *testing.T, values string) map[string]object {
	t.Helper()
	out := map[string]object{}
	for _, o := range render(t, valuesSet{name: values, values: values}) {
		if o.kind() == "Deployment" || o.kind() == "DaemonSet" {
			out[o.id()] = o
		}
	}
	return out
}

func containers(o object) []map[string]any {
	var cs []map[string]any
	l, _ := get(o.obj, "spec", "template", "spec", "containers").([]any)
	for _, c := range l {
		cs = append(cs, c.(map[string]any))
	}
	return cs
}

// No images are published: without image.repository, image.tag and
// nodeAgent.image.repository the chart renders nothing and says how to build them.
func TestImagesRequired(t *testing.T) {
	for _, c := range []struct{ values, missing string }{
		{``, "image.repository and image.tag not set"},
		{`image: {repository: registry.corp/tessera}`, "image.tag not set"},
		{`{image: {tag: "1.0"}, nodeAgent: {image: {repository: registry.corp/agent}}}`, "image.repository not set"},
		{`image: {repository: registry.corp/tessera, tag: "1.0"}`, "nodeAgent.image.repository not set"},
		{`{image: {repository: registry.corp/tessera, tag: "1.0"}, nodeAgent: {image: {tag: "1.0"}}}`, "nodeAgent.image.repository not set"},
	} {
		v := map[string]any{}
		if err := yaml.Unmarshal([]byte(c.values), &v); err != nil {
			t.Fatal(err)
		}
		_, err := Render(chartDir, Options{Namespace: namespace, Values: v})
		if err == nil {
			t.Errorf("%q: rendered, want an error saying %s", c.values, c.missing)
			continue
		}
		for _, want := range []string{c.missing, "make images REGISTRY=<registry>", "image.repository=<registry>/tessera,", "image.tag=<tag>", "nodeAgent.image.repository=<registry>/tessera-node-agent"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q: the error does not say %q: %v", c.values, want, err)
			}
		}
	}
	for _, values := range []string{
		`{image: {repository: registry.corp/tessera, tag: "1.0"}, nodeAgent: {image: {repository: registry.corp/agent}}}`,
		`{image: {repository: registry.corp/tessera, tag: "1.0"}, nodeAgent: {enabled: false}}`,
	} {
		v := map[string]any{}
		if err := yaml.Unmarshal([]byte(values), &v); err != nil {
			t.Fatal(err)
		}
		if _, err := Render(chartDir, Options{Namespace: namespace, Values: v}); err != nil {
			t.Errorf("%q: %v", values, err)
		}
	}
}

// Every component runs the global image, the node agent its own repository with the
// global tag; a component's own image.repository or image.tag overrides them.
func TestImages(t *testing.T) {
	for _, c := range []struct {
		values string
		want   map[string]string // kind/name: image
	}{
		{``, map[string]string{ // testImages
			"Deployment/tessera-scheduler":  "registry.example.com/tessera/tessera:1.0.0",
			"Deployment/tessera-webhook":    "registry.example.com/tessera/tessera:1.0.0",
			"Deployment/tessera-autoscaler": "registry.example.com/tessera/tessera:1.0.0",
			"DaemonSet/tessera-node-agent":  "registry.example.com/tessera/tessera-node-agent:1.0.0",
		}},
		{`image: {tag: "0.2.0-rc.1"}`, map[string]string{
			"Deployment/tessera-scheduler": "registry.example.com/tessera/tessera:0.2.0-rc.1",
			"DaemonSet/tessera-node-agent": "registry.example.com/tessera/tessera-node-agent:0.2.0-rc.1",
		}},
		{`{image: {repository: registry.corp/tessera, tag: "1.0"}, webhook: {image: {tag: dev}}, nodeAgent: {image: {repository: registry.corp/agent, tag: "9"}}}`, map[string]string{
			"Deployment/tessera-scheduler": "registry.corp/tessera:1.0",
			"Deployment/tessera-webhook":   "registry.corp/tessera:dev",
			"DaemonSet/tessera-node-agent": "registry.corp/agent:9",
		}},
	} {
		ws := workloads(t, c.values)
		for id, want := range c.want {
			w, ok := ws[id]
			if !ok {
				t.Errorf("%q: %s not rendered", c.values, id)
				continue
			}
			if got := str(containers(w)[0], "image"); got != want {
				t.Errorf("%q: %s image %s, want %s", c.values, id, got, want)
			}
			if got := str(containers(w)[0], "imagePullPolicy"); got != "IfNotPresent" {
				t.Errorf("%q: %s imagePullPolicy %s, want IfNotPresent", c.values, id, got)
			}
		}
	}
	// Nothing the chart renders, hooks included, runs an image without a tag or tagged latest.
	for _, s := range valuesSets {
		for _, o := range render(t, s) {
			spec, _ := get(o.obj, "spec", "template", "spec").(map[string]any)
			if o.kind() == "Pod" {
				spec, _ = o.obj["spec"].(map[string]any)
			}
			cs, _ := spec["containers"].([]any)
			for _, c := range cs {
				img := str(c.(map[string]any), "image")
				if _, tag, ok := strings.Cut(img[strings.LastIndex(img, "/")+1:], ":"); !ok || tag == "" || tag == "latest" {
					t.Errorf("%s: %s runs %q: pin a tag", s.name, o.id(), img)
				}
			}
		}
	}
}

// podAnnotations and podLabels, global and per component, reach every pod template; a
// component's own win over the global ones, and neither replaces the chart's labels.
func TestPodAnnotationsAndLabels(t *testing.T) {
	ws := workloads(t, `
podAnnotations: {team: platform, scrape: "global"}
podLabels: {cost-center: gpu, app.kubernetes.io/name: hijacked}
scheduler: {podAnnotations: {scrape: "scheduler"}, podLabels: {tier: control}, config: "actions: [enqueue, allocate]\n"}
nodeAgent: {podLabels: {cost-center: nodes}}
`)
	for _, id := range workloadIDs {
		w, ok := ws[id]
		if !ok {
			t.Fatalf("%s not rendered", id)
		}
		ann, _ := get(w.obj, "spec", "template", "metadata", "annotations").(map[string]any)
		labels, _ := get(w.obj, "spec", "template", "metadata", "labels").(map[string]any)
		if ann["team"] != "platform" || labels["app.kubernetes.io/part-of"] != "tessera" {
			t.Errorf("%s: annotations %v labels %v: global podAnnotations or chart labels missing", id, ann, labels)
		}
		wantScrape, wantCost := "global", "gpu"
		switch id {
		case "Deployment/tessera-scheduler":
			wantScrape = "scheduler"
			if labels["tier"] != "control" || ann["checksum/config"] == nil {
				t.Errorf("%s: labels %v annotations %v: component podLabels or config checksum missing", id, labels, ann)
			}
		case "DaemonSet/tessera-node-agent":
			wantCost = "nodes"
		}
		if ann["scrape"] != wantScrape || labels["cost-center"] != wantCost {
			t.Errorf("%s: scrape=%v cost-center=%v, want %s and %s", id, ann["scrape"], labels["cost-center"], wantScrape, wantCost)
		}
		// The selector still selects the pods.
		sel, _ := get(w.obj, "spec", "selector", "matchLabels").(map[string]any)
		for k, v := range sel {
			if labels[k] != v {
				t.Errorf("%s: pod label %s=%v, the selector wants %v", id, k, labels[k], v)
			}
		}
	}
	// Unset, no annotations appear where there were none.
	for id, w := range workloads(t, ``) {
		if ann := get(w.obj, "spec", "template", "metadata", "annotations"); ann != nil {
			t.Errorf("defaults: %s has pod annotations %v", id, ann)
		}
	}
}

// The scheduler's, the webhook's and the autoscaler's replicas spread over nodes by
// default (ScheduleAnyway); values replace or empty the constraints.
func TestTopologySpread(t *testing.T) {
	spread := func(w object) []any {
		l, _ := get(w.obj, "spec", "template", "spec", "topologySpreadConstraints").([]any)
		return l
	}
	ws := workloads(t, ``)
	for _, id := range []string{"Deployment/tessera-scheduler", "Deployment/tessera-webhook", "Deployment/tessera-autoscaler"} {
		l := spread(ws[id])
		if len(l) != 1 {
			t.Fatalf("defaults: %s topologySpreadConstraints %v, want one", id, l)
		}
		c := l[0].(map[string]any)
		sel := get(c, "labelSelector", "matchLabels")
		want := get(ws[id].obj, "spec", "selector", "matchLabels")
		if str(c, "topologyKey") != "kubernetes.io/hostname" || str(c, "whenUnsatisfiable") != "ScheduleAnyway" || !reflect.DeepEqual(sel, want) {
			t.Errorf("defaults: %s constraint %v, want kubernetes.io/hostname, ScheduleAnyway, selecting %v", id, c, want)
		}
	}
	if l := spread(ws["DaemonSet/tessera-node-agent"]); l != nil {
		t.Errorf("defaults: the node agent (one pod per node) has topologySpreadConstraints %v", l)
	}
	ws = workloads(t, `
webhook: {topologySpreadConstraints: []}
scheduler:
  topologySpreadConstraints:
    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {custom: "yes"}}}
`)
	if l := spread(ws["Deployment/tessera-webhook"]); l != nil {
		t.Errorf("an empty list: the webhook has topologySpreadConstraints %v", l)
	}
	l := spread(ws["Deployment/tessera-scheduler"])
	if len(l) != 1 || str(l[0].(map[string]any), "topologyKey") != "topology.kubernetes.io/zone" ||
		!reflect.DeepEqual(get(l[0], "labelSelector", "matchLabels"), map[string]any{"custom": "yes"}) {
		t.Errorf("override: the scheduler's constraints %v", l)
	}
}

// Security contexts come from values: the defaults are the hardened ones, and on OpenShift
// `runAsUser: null` drops the fixed UID (a null key removes a default; the rest stays).
func TestSecurityContextOverrides(t *testing.T) {
	podSC := func(w object) map[string]any {
		m, _ := get(w.obj, "spec", "template", "spec", "securityContext").(map[string]any)
		return m
	}
	ws := workloads(t, ``)
	for _, id := range []string{"Deployment/tessera-scheduler", "Deployment/tessera-webhook", "Deployment/tessera-autoscaler"} {
		want := map[string]any{"runAsNonRoot": true, "runAsUser": float64(65532), "runAsGroup": float64(65532), "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
		if got := podSC(ws[id]); !reflect.DeepEqual(got, want) {
			t.Errorf("defaults: %s pod securityContext %v, want %v", id, got, want)
		}
	}
	if got := podSC(ws["DaemonSet/tessera-node-agent"]); got["runAsUser"] != float64(0) {
		t.Errorf("defaults: the node agent's pod securityContext %v, want root (its device plugin socket)", got)
	}

	ws = workloads(t, `
scheduler: {podSecurityContext: {runAsUser: null, runAsGroup: null}}
webhook: {podSecurityContext: {runAsUser: null, runAsGroup: null}, securityContext: {readOnlyRootFilesystem: true, runAsUser: 1000700000}}
autoscaler: {podSecurityContext: null}
`)
	for _, id := range []string{"Deployment/tessera-scheduler", "Deployment/tessera-webhook"} {
		sc := podSC(ws[id])
		if _, ok := sc["runAsUser"]; ok {
			t.Errorf("runAsUser: null: %s pod securityContext %v still sets runAsUser", id, sc)
		}
		if _, ok := sc["runAsGroup"]; ok {
			t.Errorf("runAsGroup: null: %s pod securityContext %v still sets runAsGroup", id, sc)
		}
		if sc["runAsNonRoot"] != true || str(sc, "seccompProfile", "type") != "RuntimeDefault" {
			t.Errorf("%s: pod securityContext %v lost the defaults that were not removed", id, sc)
		}
	}
	if sc := podSC(ws["Deployment/tessera-autoscaler"]); sc != nil {
		t.Errorf("podSecurityContext: null: the autoscaler's pod securityContext %v, want none", sc)
	}
	// A container key merges into the defaults.
	csc, _ := containers(ws["Deployment/tessera-webhook"])[0]["securityContext"].(map[string]any)
	if csc["runAsUser"] != float64(1000700000) || csc["allowPrivilegeEscalation"] != false {
		t.Errorf("the webhook's container securityContext %v, want runAsUser added to the defaults", csc)
	}
}

// webhook.allowedSchedulers and webhook.schedulerNameAliases become one
// --allowed-scheduler and one --scheduler-name-alias per name.
func TestWebhookSchedulerNames(t *testing.T) {
	for _, c := range []struct {
		values string
		want   []string
	}{
		{``, nil},
		{`webhook: {allowedSchedulers: [volcano, kueue-sched]}`, []string{"--allowed-scheduler=volcano", "--allowed-scheduler=kueue-sched"}},
		{`webhook: {allowedSchedulers: [yunikorn], schedulerNameAliases: [volcano, scheduler-plugins-scheduler]}`,
			[]string{"--allowed-scheduler=yunikorn", "--scheduler-name-alias=volcano", "--scheduler-name-alias=scheduler-plugins-scheduler"}},
	} {
		w := workloads(t, c.values)["Deployment/tessera-webhook"]
		var got []string
		for _, a := range containers(w)[0]["args"].([]any) {
			if s := a.(string); strings.HasPrefix(s, "--allowed-scheduler") || strings.HasPrefix(s, "--scheduler-name-alias") {
				got = append(got, s)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: webhook args %v, want %v", c.values, got, c.want)
		}
	}
	for _, bad := range []struct{ values, field string }{
		{`webhook: {allowedSchedulers: [""]}`, "allowedSchedulers"},
		{`webhook: {schedulerNameAliases: [""]}`, "schedulerNameAliases"},
		{`webhook: {schedulerNameAliases: [tessera]}`, "schedulerNameAliases"},
		{`webhook: {schedulerNameAliases: [default-scheduler]}`, "schedulerNameAliases"},
	} {
		s := valuesSet{name: "bad", values: bad.values}
		if _, err := Render(chartDir, Options{Namespace: namespace, Values: s.parse(t)}); err == nil || !strings.Contains(err.Error(), bad.field) {
			t.Errorf("%s: %v, want a schema error naming %s", bad.values, err, bad.field)
		}
	}
}

// NOTES.txt says what was installed, how to check it and where the docs are.
func TestNotes(t *testing.T) {
	for _, c := range []struct {
		values      string
		want, avoid []string
	}{
		{``, []string{"Tessera 0.1.0", "namespace " + namespace, "tessera-scheduler", "tessera-webhook", "tessera-node-agent", "tessera-autoscaler",
			"kubectl -n " + namespace + " get deployments,daemonsets,pods", "get lease tessera-scheduler", "helm test tessera -n " + namespace,
			"kubectl apply --server-side", "deploy/helm/tessera", "docs/security.md"}, nil},
		{`{nodeAgent: {enabled: false}, autoscaler: {enabled: false}, scheduler: {replicas: 1}, tenantRole: {create: true}}`,
			[]string{"tessera-scheduler", "tessera-tenant"}, []string{"tessera-node-agent", "tessera-autoscaler", "get lease", "gpunodes"}},
	} {
		s := valuesSet{name: c.values, values: c.values}
		notes, err := RenderNotes(chartDir, Options{Namespace: namespace, Values: s.parse(t)})
		if err != nil {
			t.Fatal(err)
		}
		checkSays(t, fmt.Sprintf("%q: NOTES.txt", c.values), notes, c.want, c.avoid)
		if strings.Contains(notes, "<no value>") || strings.Contains(notes, "%!") {
			t.Errorf("%q: NOTES.txt has a rendering error:\n%s", c.values, notes)
		}
	}
}
