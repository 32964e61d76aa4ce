package webhooks

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Kinds whose pod templates the webhooks read besides Pods and Jobs: the EnvGuard reads
// every one; the policies decide on those of CustomWorkloads too.
const (
	KindCronJob         = "CronJob"
	KindDeployment      = "Deployment"
	KindStatefulSet     = "StatefulSet"
	KindDaemonSet       = "DaemonSet"
	KindJobSet          = "JobSet"          // jobset.x-k8s.io
	KindRayCluster      = "RayCluster"      // ray.io
	KindRayJob          = "RayJob"          // ray.io
	KindLeaderWorkerSet = "LeaderWorkerSet" // leaderworkerset.x-k8s.io
	KindPyTorchJob      = "PyTorchJob"      // kubeflow.org (training operator)
	KindMPIJob          = "MPIJob"          // kubeflow.org (mpi-operator)
)

// CustomWorkloads are the workload controllers' custom resources the policies decide on
// when they are created, as a whole: their input describes every pod template
// (BuildInput) and their mutations land in every one (BuildPatch). The webhook
// configurations select their groups and versions.
var CustomWorkloads = []string{KindJobSet, KindRayCluster, KindRayJob, KindLeaderWorkerSet, KindPyTorchJob, KindMPIJob}

var isCustomWorkload = func() map[string]bool {
	m := make(map[string]bool, len(CustomWorkloads))
	for _, k := range CustomWorkloads {
		m[k] = true
	}
	return m
}()

// A templateSite is where a kind keeps pod templates (metadata and spec, a
// PodTemplateSpec), and how many pods each makes.
type templateSite struct {
	// path is dot-separated; "*" steps into every element of a list or member of a map.
	// Empty: the object is the template (a Pod).
	path string
	// orPath is the template the site's pods are made from when path holds none (a
	// LeaderWorkerSet's leaders are made from the worker template unless they have
	// their own). Only the policy input counts them; nothing is written there for them.
	orPath string
	// pods per template: the product of the counts (none: 1).
	pods []count
	// podsOf, when set, counts in place of pods: the pods the template makes and how
	// many of them one gang holds (obj is the object, elem what the site's "*" reached).
	// Without it a gang holds them all. about says what it counts (the reference).
	podsOf func(obj, elem map[string]any) (pods, gang int64)
	about  string
}

// A count is a number of pods read off the object: the largest of its terms (the
// smallest, with smallest), never below 0.
type count struct {
	terms    []term
	smallest bool
}

// A term is the integer at path (relative to the list element or map member the site's
// "*" reached, else to the object), def where it is absent; an optional term that is
// absent is left out.
type term struct {
	path     string
	def      int64
	optional bool
}

func num(path string, def int64) count { return count{terms: []term{{path: path, def: def}}} }

// podTemplates lists, per kind, where its pod templates are. Defaults of absent counts
// are those of the kind's controller.
var podTemplates = map[string][]templateSite{
	KindPod:         {{}},
	KindJob:         {{path: "spec.template", pods: []count{num("spec.parallelism", 1)}}},
	KindCronJob:     {{path: "spec.jobTemplate.spec.template"}},
	KindDeployment:  {{path: "spec.template"}},
	KindStatefulSet: {{path: "spec.template"}},
	KindDaemonSet:   {{path: "spec.template"}},
	KindJobSet: {{path: "spec.replicatedJobs.*.template.spec.template", pods: []count{num("replicas", 1),
		{terms: []term{{path: "template.spec.parallelism", def: 1}, {path: "template.spec.completions", optional: true}}, smallest: true}}}},
	KindRayCluster: raySites("spec"),
	KindRayJob: append(raySites("spec.rayClusterSpec"), templateSite{path: "spec.submitterPodTemplate", podsOf: ownGang,
		about: "1, a gang of its own"}),
	// Every group of size pods is a gang: its leader and size-1 workers.
	KindLeaderWorkerSet: {
		{path: "spec.leaderWorkerTemplate.leaderTemplate", orPath: "spec.leaderWorkerTemplate.workerTemplate",
			podsOf: func(obj, _ map[string]any) (int64, int64) { return lwsGroups(obj), 1 },
			about:  "`spec.replicas` (absent: 1), 1 per group"},
		{path: "spec.leaderWorkerTemplate.workerTemplate",
			podsOf: func(obj, _ map[string]any) (int64, int64) {
				per := max(intOr(obj, "spec.leaderWorkerTemplate.size", 1)-1, 0)
				return lwsGroups(obj) * per, per
			},
			about: "`spec.replicas` (absent: 1) × (`spec.leaderWorkerTemplate.size` (absent: 1) − 1), size − 1 per group"},
	},
	KindPyTorchJob: {{path: "spec.pytorchReplicaSpecs.*.template", pods: []count{num("replicas", 1)}}},
	KindMPIJob: {
		// Under WaitForWorkersReady the launcher is made once the workers run: not in their gang.
		{path: "spec.mpiReplicaSpecs.Launcher.template", podsOf: func(obj, _ map[string]any) (int64, int64) {
			n := max(intOr(obj, "spec.mpiReplicaSpecs.Launcher.replicas", 1), 0)
			if lookupPath(obj, "spec.launcherCreationPolicy") == "WaitForWorkersReady" {
				return n, 0
			}
			return n, n
		}, about: "`spec.mpiReplicaSpecs.Launcher.replicas` (absent: 1), none of them in the gang under `launcherCreationPolicy: WaitForWorkersReady`"},
		{path: "spec.mpiReplicaSpecs.Worker.template", pods: []count{num("spec.mpiReplicaSpecs.Worker.replicas", 0)}},
	},
}

// raySites are a Ray cluster spec's templates: one head, and per worker group its
// workers times numOfHosts pods. KubeRay keeps replicas within [minReplicas,
// maxReplicas] and makes none for a suspended group; the gang of an autoscaling cluster
// holds minReplicas of them.
func raySites(spec string) []templateSite {
	return []templateSite{
		{path: spec + ".headGroupSpec.template"},
		{path: spec + ".workerGroupSpecs.*.template", podsOf: func(obj, g map[string]any) (int64, int64) {
			if lookupPath(g, "suspend") == true {
				return 0, 0
			}
			hosts := max(intOr(g, "numOfHosts", 1), 1)
			lo := max(intOr(g, "minReplicas", 0), 0)
			n := min(max(intOr(g, "replicas", lo), lo), intOr(g, "maxReplicas", math.MaxInt32))
			if lookupPath(obj, spec+".enableInTreeAutoscaling") == true {
				return n * hosts, lo * hosts
			}
			return n * hosts, n * hosts
		}, about: "`replicas` (absent: `minReplicas`) kept within [`minReplicas`, `maxReplicas`] × `numOfHosts` (absent: 1), none when `suspend`; the gang holds `minReplicas` × `numOfHosts` under `enableInTreeAutoscaling`"},
	}
}

// ownGang: the template's one pod is a gang of its own (a RayJob's submitter).
func ownGang(_, _ map[string]any) (int64, int64) { return 1, 0 }

// lwsGroups is how many groups a LeaderWorkerSet makes.
func lwsGroups(obj map[string]any) int64 { return max(intOr(obj, "spec.replicas", 1), 0) }

// intOr is the integer at path in m, def when there is none; never above MaxInt32, as
// the API's counts are int32 (two of them never overflow a product).
func intOr(m map[string]any, path string, def int64) int64 {
	if v, ok := integer(lookupPath(m, path)); ok {
		return min(v, math.MaxInt32)
	}
	return def
}

// A placedTemplate is one pod template of an object.
type placedTemplate struct {
	// path is where it is, with list indexes and map keys: spec.replicatedJobs[1].template.spec.template.
	path string
	tmpl map[string]any
	// pods is how many pods it makes, gang how many of them one gang holds.
	pods, gang int64
}

// specPath is where the template's pod spec is.
func (p placedTemplate) specPath() string {
	if p.path == "" {
		return "spec"
	}
	return p.path + ".spec"
}

// templatesOf lists the pod templates of obj, a kind, site by site; a map's members in
// key order. withOrPath adds the templates sites without their own are made from
// (the policy input counts their pods; patches and guards skip them).
func templatesOf(kind string, obj map[string]any, withOrPath bool) []placedTemplate {
	var out []placedTemplate
	for _, s := range podTemplates[kind] {
		n := len(out)
		walk(obj, s.path, "", obj, func(where string, tmpl, elem map[string]any) {
			pods, gang := s.count(obj, elem)
			out = append(out, placedTemplate{path: where, tmpl: tmpl, pods: pods, gang: gang})
		})
		if len(out) == n && withOrPath && s.orPath != "" {
			if tmpl, ok := lookupPath(obj, s.orPath).(map[string]any); ok {
				pods, gang := s.count(obj, obj)
				out = append(out, placedTemplate{path: s.orPath, tmpl: tmpl, pods: pods, gang: gang})
			}
		}
	}
	return out
}

// walk calls f with every map at path below cur (where names cur; elem is the list
// element or map member the last "*" reached).
func walk(cur any, path, where string, elem map[string]any, f func(where string, tmpl, elem map[string]any)) {
	if path == "" {
		if m, ok := cur.(map[string]any); ok {
			f(where, m, elem)
		}
		return
	}
	seg, rest, _ := strings.Cut(path, ".")
	if seg != "*" {
		if m, ok := cur.(map[string]any); ok && m[seg] != nil {
			walk(m[seg], rest, join(where, seg), elem, f)
		}
		return
	}
	switch c := cur.(type) {
	case []any:
		for i, v := range c {
			m, _ := v.(map[string]any)
			walk(v, rest, where+"["+strconv.Itoa(i)+"]", m, f)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(c)) {
			m, _ := c[k].(map[string]any)
			walk(c[k], rest, join(where, k), m, f)
		}
	}
}

func join(where, seg string) string {
	if where == "" {
		return seg
	}
	return where + "." + seg
}

// count is how many pods one template of the site makes and how many of them one gang
// holds; elem is what its "*" reached.
func (s templateSite) count(obj, elem map[string]any) (pods, gang int64) {
	if s.podsOf != nil {
		return s.podsOf(obj, elem)
	}
	pods = 1
	for _, c := range s.pods {
		var values []int64
		for _, t := range c.terms {
			if v, ok := integer(lookupPath(elem, t.path)); ok {
				values = append(values, v)
			} else if !t.optional {
				values = append(values, t.def)
			}
		}
		n := slices.Max(values)
		if c.smallest {
			n = slices.Min(values)
		}
		// The API's counts are int32; two of them never overflow the product.
		pods *= min(max(n, 0), math.MaxInt32)
	}
	return pods, pods
}

func lookupPath(obj map[string]any, path string) any {
	var cur any = obj
	for seg := range strings.SplitSeq(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[seg]
	}
	return cur
}

func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		return int64(n), n == float64(int64(n))
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// remarshal decodes v, a part of an object decoded into maps, into out.
func remarshal(v any, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
