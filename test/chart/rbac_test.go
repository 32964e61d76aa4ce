package chart

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// grant is a table row: verbs on resources of one API group, everywhere (cluster) or in
// Tessera's namespace only, on every object or on the named ones.
type grant struct {
	namespaced           bool
	group                string
	resources, verbs     []string
	names                []string
	serviceAccountOrRole string
}

func g(who string, namespaced bool, group, resources, verbs string, names ...string) grant {
	return grant{serviceAccountOrRole: who, namespaced: namespaced, group: group,
		resources: strings.Split(resources, ","), verbs: strings.Split(verbs, ","), names: names}
}

const (
	clusterWide = false
	inTessera   = true
)

// allowedRBAC is everything each of Tessera's ServiceAccounts may do, and the tenant
// ClusterRole: the table of docs/security.md ("What Tessera's own accounts may do"),
// which TestRBACTableDocumented keeps equal to this one. A rendered rule beyond it fails
// TestRBACWithinThreatModel, wildcards included; a row no values set grants fails too,
// so that the table stays the chart's.
var allowedRBAC = []grant{
	// The scheduler: reads what a session needs, binds and evicts pods, writes PodGroups
	// of implicit gangs and the status of PodGroups and Queues; its leader Lease.
	g("tessera-scheduler", clusterWide, "", "pods,nodes,namespaces", "list,watch"),
	g("tessera-scheduler", clusterWide, "batch", "jobs", "list,watch"),
	g("tessera-scheduler", clusterWide, "scheduling.k8s.io", "priorityclasses", "list,watch"),
	g("tessera-scheduler", clusterWide, "policy", "poddisruptionbudgets", "list,watch"),
	g("tessera-scheduler", clusterWide, "tessera.dev", "gpunodes,queues,podgroups", "list,watch"),
	g("tessera-scheduler", clusterWide, "scheduling.k8s.io", "podgroups", "list,watch"),
	g("tessera-scheduler", clusterWide, "scheduling.x-k8s.io", "podgroups", "list,watch"),
	g("tessera-scheduler", clusterWide, "jobset.x-k8s.io", "jobsets", "list,watch"),
	g("tessera-scheduler", clusterWide, "ray.io", "rayclusters", "list,watch"),
	g("tessera-scheduler", clusterWide, "leaderworkerset.x-k8s.io", "leaderworkersets", "list,watch"),
	g("tessera-scheduler", clusterWide, "kubeflow.org", "pytorchjobs,mpijobs", "list,watch"),
	g("tessera-scheduler", clusterWide, "", "pods/binding,pods/eviction", "create"),
	g("tessera-scheduler", clusterWide, "", "pods/status", "patch"),
	g("tessera-scheduler", clusterWide, "tessera.dev", "podgroups", "create,patch"),
	g("tessera-scheduler", clusterWide, "tessera.dev", "podgroups/status,queues/status", "patch"),
	g("tessera-scheduler", clusterWide, "events.k8s.io", "events", "create,patch"),
	g("tessera-scheduler", clusterWide, "resource.k8s.io", "resourceslices,deviceclasses,resourceclaims", "list,watch"),
	g("tessera-scheduler", clusterWide, "resource.k8s.io", "resourceclaims", "create,update,patch,delete"),
	g("tessera-scheduler", clusterWide, "resource.k8s.io", "resourceclaims/status,resourceclaims/binding", "update,patch"),
	g("tessera-scheduler", inTessera, "coordination.k8s.io", "leases", "get,create,update"),
	g("tessera-scheduler", inTessera, "", "events", "create,patch"),

	// The webhook: reads policy data and the GPUProfiles it right-sizes pods by, reports
	// AdmissionPolicy status; with its own certificate, updates Tessera's two webhook
	// configurations and its one Secret.
	g("tessera-webhook", clusterWide, "tessera.dev", "queues,gpunodes,admissionpolicies", "get,list,watch"),
	g("tessera-webhook", clusterWide, "resource.k8s.io", "resourceclaims,resourceclaimtemplates,deviceclasses", "get,list,watch"),
	g("tessera-webhook", clusterWide, "scheduling.k8s.io", "priorityclasses", "get,list,watch"),
	g("tessera-webhook", clusterWide, "", "namespaces", "get,list,watch"),
	g("tessera-webhook", clusterWide, "tessera.dev", "gpuprofiles", "get,list,watch"),
	g("tessera-webhook", clusterWide, "tessera.dev", "admissionpolicies/status", "get,update,patch"),
	g("tessera-webhook", clusterWide, "admissionregistration.k8s.io", "mutatingwebhookconfigurations,validatingwebhookconfigurations", "list,watch"),
	g("tessera-webhook", clusterWide, "admissionregistration.k8s.io", "mutatingwebhookconfigurations,validatingwebhookconfigurations", "update", "tessera"),
	g("tessera-webhook", clusterWide, "", "events", "create,patch"),
	g("tessera-webhook", inTessera, "", "secrets", "list,watch"),
	g("tessera-webhook", inTessera, "", "secrets", "update", "tessera-webhook-tls"),

	// The autoscaler: the scheduler's view for its what-if, taints/cordons/drains nodes,
	// records scale-downs, suspends the workloads of idle pods (Queue idle reclaim);
	// keeps the GPUProfiles of ended pods' workloads (GPU right-sizing);
	// Cluster API when this is the management cluster; its Lease.
	g("tessera-autoscaler", clusterWide, "", "pods,nodes,namespaces", "list,watch"),
	g("tessera-autoscaler", clusterWide, "resource.k8s.io", "resourceslices,deviceclasses,resourceclaims", "list,watch"),
	g("tessera-autoscaler", clusterWide, "batch", "jobs", "list,watch"),
	g("tessera-autoscaler", clusterWide, "scheduling.k8s.io", "podgroups", "list,watch"),
	g("tessera-autoscaler", clusterWide, "scheduling.x-k8s.io", "podgroups", "list,watch"),
	g("tessera-autoscaler", clusterWide, "jobset.x-k8s.io", "jobsets", "list,watch"),
	g("tessera-autoscaler", clusterWide, "ray.io", "rayclusters", "list,watch"),
	g("tessera-autoscaler", clusterWide, "leaderworkerset.x-k8s.io", "leaderworkersets", "list,watch"),
	g("tessera-autoscaler", clusterWide, "kubeflow.org", "pytorchjobs,mpijobs", "list,watch"),
	g("tessera-autoscaler", clusterWide, "scheduling.k8s.io", "priorityclasses", "list,watch"),
	g("tessera-autoscaler", clusterWide, "policy", "poddisruptionbudgets", "list,watch"),
	g("tessera-autoscaler", clusterWide, "tessera.dev", "gpunodes,queues,podgroups,scaledownpolicies", "list,watch"),
	g("tessera-autoscaler", clusterWide, "", "nodes", "patch"),
	g("tessera-autoscaler", clusterWide, "", "pods/eviction", "create"),
	g("tessera-autoscaler", clusterWide, "apps", "replicasets", "get"),
	g("tessera-autoscaler", clusterWide, "apps", "deployments,statefulsets", "get,patch"),
	g("tessera-autoscaler", clusterWide, "batch", "jobs", "get,patch"),
	g("tessera-autoscaler", clusterWide, "jobset.x-k8s.io", "jobsets", "get,patch"),
	g("tessera-autoscaler", clusterWide, "ray.io", "rayclusters,rayjobs", "get,patch"),
	g("tessera-autoscaler", clusterWide, "leaderworkerset.x-k8s.io", "leaderworkersets", "get,patch"),
	g("tessera-autoscaler", clusterWide, "kubeflow.org", "mpijobs,pytorchjobs", "get,patch"),
	g("tessera-autoscaler", clusterWide, "", "pods", "get"),
	g("tessera-autoscaler", clusterWide, "tessera.dev", "gpuprofiles", "get,create"),
	g("tessera-autoscaler", clusterWide, "tessera.dev", "gpuprofiles/status", "update"),
	g("tessera-autoscaler", clusterWide, "tessera.dev", "scaledownpolicies/status", "patch"),
	g("tessera-autoscaler", clusterWide, "events.k8s.io", "events", "create,patch"),
	g("tessera-autoscaler", clusterWide, "cluster.x-k8s.io", "machines", "list,patch"),
	g("tessera-autoscaler", clusterWide, "cluster.x-k8s.io", "machinesets,machinedeployments", "list"),
	g("tessera-autoscaler", clusterWide, "cluster.x-k8s.io", "machinesets/scale,machinedeployments/scale", "get,update"),
	g("tessera-autoscaler", inTessera, "coordination.k8s.io", "leases", "get,create,update"),
	g("tessera-autoscaler", inTessera, "", "events", "create,patch"),

	// The node agent: labels its node and publishes GPU-memory capacity, writes its
	// GPUNode, lists the pods (of its node) for the device plugin.
	g("tessera-node-agent", clusterWide, "", "nodes", "get,patch"),
	g("tessera-node-agent", clusterWide, "", "nodes/status", "patch"),
	g("tessera-node-agent", clusterWide, "tessera.dev", "gpunodes", "get,create,patch"),
	g("tessera-node-agent", clusterWide, "tessera.dev", "gpunodes/status", "patch"),
	g("tessera-node-agent", clusterWide, "", "pods", "list"),
	g("tessera-node-agent", clusterWide, "", "pods/eviction", "create"),
	g("tessera-node-agent", clusterWide, "", "events", "create,patch"),
	g("tessera-node-agent", clusterWide, "resource.k8s.io", "resourceslices", "list,watch,create,update,delete"),
	g("tessera-node-agent", clusterWide, "resource.k8s.io", "resourceclaims", "get"),

	// `helm test`: reads the scheduler's Lease.
	g("tessera-test", inTessera, "coordination.k8s.io", "leases", "get", "tessera-scheduler"),
	g("tessera-test", inTessera, "apps", "daemonsets", "get", "tessera-node-agent"),

	// The tenant ClusterRole (tenantRole.create), bound per tenant namespace: runs and
	// removes its own GPU work, claims included; no update or patch, no claim status,
	// nothing cluster-wide.
	g("ClusterRole/tessera-tenant", clusterWide, "", "pods", "get,list,watch,create,delete"),
	g("ClusterRole/tessera-tenant", clusterWide, "", "pods/log", "get"),
	g("ClusterRole/tessera-tenant", clusterWide, "batch", "jobs", "get,list,watch,create,delete"),
	g("ClusterRole/tessera-tenant", clusterWide, "tessera.dev", "podgroups", "get,list,watch,create,delete"),
	g("ClusterRole/tessera-tenant", clusterWide, "resource.k8s.io", "resourceclaims,resourceclaimtemplates", "get,list,watch,create,delete"),
}

const tenantRole = "ClusterRole/tessera-tenant"

// perm is one verb on one resource, on every object (name "") or one, granted
// cluster-wide or in Tessera's namespace.
type perm struct {
	group, resource, verb, name string
	namespaced                  bool
}

func (p perm) String() string {
	s := p.group + "/" + p.resource
	if p.group == "" {
		s = "core/" + p.resource
	}
	if p.name != "" {
		s += "[" + p.name + "]"
	}
	s += " " + p.verb
	if p.namespaced {
		s += " (in " + namespace + ")"
	}
	return s
}

func (g grant) perms() []perm {
	var ps []perm
	names := g.names
	if len(names) == 0 {
		names = []string{""}
	}
	for _, r := range g.resources {
		for _, v := range g.verbs {
			for _, n := range names {
				ps = append(ps, perm{group: g.group, resource: r, verb: v, name: n, namespaced: g.namespaced})
			}
		}
	}
	return ps
}

// allows reports whether the table row grant covers p: the same verb on the same
// resource, on every object or the same one, and no wider in scope.
func (p perm) within(a perm) bool {
	return p.group == a.group && p.resource == a.resource && p.verb == a.verb &&
		(a.name == "" || a.name == p.name) && (!a.namespaced || p.namespaced)
}

// rulePerms expands RBAC rules; nonResourceURLs are returned apart.
func rulePerms(rules []any, namespaced bool) (ps []perm, urls []string) {
	for _, r := range rules {
		r := r.(map[string]any)
		list := func(f string) []string {
			var out []string
			l, _ := r[f].([]any)
			for _, v := range l {
				out = append(out, v.(string))
			}
			return out
		}
		urls = append(urls, list("nonResourceURLs")...)
		names := list("resourceNames")
		if len(names) == 0 {
			names = []string{""}
		}
		for _, grp := range list("apiGroups") {
			for _, res := range list("resources") {
				for _, v := range list("verbs") {
					for _, n := range names {
						ps = append(ps, perm{group: grp, resource: res, verb: v, name: n, namespaced: namespaced})
					}
				}
			}
		}
	}
	return ps, urls
}

// granted collects, for every ServiceAccount bound in the rendering, what its bindings
// grant; problems are bindings that cannot be checked.
func granted(objs []object) (bySA map[string][]perm, problems []string) {
	roles := map[string][]any{}
	sas := map[string]bool{}
	for _, o := range objs {
		switch o.kind() {
		case "ClusterRole":
			roles["ClusterRole/"+o.name()], _ = o.obj["rules"].([]any)
		case "Role":
			roles["Role/"+str(o.obj, "metadata", "namespace")+"/"+o.name()], _ = o.obj["rules"].([]any)
		case "ServiceAccount":
			if ns := str(o.obj, "metadata", "namespace"); ns != namespace {
				problems = append(problems, fmt.Sprintf("%s in namespace %q, not Tessera's", o.id(), ns))
			}
			sas[o.name()] = true
		}
	}
	bySA = map[string][]perm{}
	for sa := range sas {
		bySA[sa] = nil
	}
	for _, o := range objs {
		if o.kind() != "RoleBinding" && o.kind() != "ClusterRoleBinding" {
			continue
		}
		ns := str(o.obj, "metadata", "namespace")
		kind, name := str(o.obj, "roleRef", "kind"), str(o.obj, "roleRef", "name")
		key := "ClusterRole/" + name
		if kind == "Role" {
			key = "Role/" + ns + "/" + name
		}
		rules, ok := roles[key]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s binds %s, which the chart does not render: its rules cannot be checked", o.id(), key))
			continue
		}
		if o.kind() == "RoleBinding" && ns != namespace {
			problems = append(problems, fmt.Sprintf("%s grants in namespace %q, not Tessera's", o.id(), ns))
		}
		ps, urls := rulePerms(rules, o.kind() == "RoleBinding")
		if len(urls) > 0 {
			problems = append(problems, fmt.Sprintf("%s grants nonResourceURLs %v", o.id(), urls))
		}
		subjects, _ := o.obj["subjects"].([]any)
		for _, s := range subjects {
			s := s.(map[string]any)
			if str(s, "kind") != "ServiceAccount" || str(s, "namespace") != namespace || !sas[str(s, "name")] {
				problems = append(problems, fmt.Sprintf("%s binds %s %s/%s: only the chart's ServiceAccounts may be bound", o.id(), str(s, "kind"), str(s, "namespace"), str(s, "name")))
				continue
			}
			bySA[str(s, "name")] = append(bySA[str(s, "name")], ps...)
		}
	}
	return bySA, problems
}

// Every rule of every Role and ClusterRole bound to a Tessera ServiceAccount, in every
// values set (and with the tenant role on), is within the threat model's table: no verb,
// resource, object or scope beyond it, no wildcard; and every row of the table is used.
func TestRBACWithinThreatModel(t *testing.T) {
	allowed := map[string][]perm{}
	for _, gr := range allowedRBAC {
		allowed[gr.serviceAccountOrRole] = append(allowed[gr.serviceAccountOrRole], gr.perms()...)
	}
	used := map[string]map[perm]bool{}
	sets := append(slices.Clone(valuesSets), valuesSet{name: "tenant-role", values: `tenantRole: {create: true}`})
	for _, s := range sets {
		objs := render(t, s)
		bySA, problems := granted(objs)
		for _, p := range problems {
			t.Errorf("%s: %s", s.name, p)
		}
		// The tenant role is checked as if bound (it is meant to be, per namespace).
		for _, o := range objs {
			if o.id() == tenantRole {
				bySA[tenantRole], _ = rulePerms(o.obj["rules"].([]any), false)
			}
		}
		for who, ps := range bySA {
			table, known := allowed[who]
			if !known {
				t.Errorf("%s: ServiceAccount %s is not in the table of allowed permissions (docs/security.md)", s.name, who)
				continue
			}
			if len(ps) == 0 {
				t.Errorf("%s: ServiceAccount %s is bound to nothing", s.name, who)
			}
			if used[who] == nil {
				used[who] = map[perm]bool{}
			}
			for _, p := range ps {
				i := slices.IndexFunc(table, p.within)
				if i < 0 {
					t.Errorf("%s: %s may %s, beyond the threat model's table", s.name, who, p)
					continue
				}
				used[who][table[i]] = true
			}
		}
	}
	for who, table := range allowed {
		for _, a := range table {
			if !used[who][a] {
				t.Errorf("the table allows %s %s, which no values set grants: remove the row (and from docs/security.md)", who, a)
			}
		}
	}
}

// The chart binds the tenant role nowhere (a ClusterRoleBinding would grant it in every
// namespace, Tessera's included), and it holds none of what makes a tenant part of the
// platform team (docs/security.md, "Who the tenant is").
func TestTenantRole(t *testing.T) {
	objs := render(t, valuesSet{name: "tenant-role", values: `tenantRole: {create: true}`})
	var ps []perm
	for _, o := range objs {
		if o.id() == tenantRole {
			ps, _ = rulePerms(o.obj["rules"].([]any), false)
		}
		if (o.kind() == "RoleBinding" || o.kind() == "ClusterRoleBinding") && str(o.obj, "roleRef", "name") == "tessera-tenant" {
			t.Errorf("%s binds the tenant role; bind it per tenant namespace, outside the chart", o.id())
		}
	}
	if len(ps) == 0 {
		t.Fatalf("tenantRole.create: %s not rendered", tenantRole)
	}
	forbidden := map[string]string{
		"pods/binding": "", "pods/status": "", "pods/eviction": "", "pods/exec": "", "pods/attach": "", "pods/ephemeralcontainers": "",
		"nodes": "", "nodes/status": "", "namespaces": "", "secrets": "", "serviceaccounts": "",
		"queues": "", "admissionpolicies": "", "scaledownpolicies": "", "gpunodes": "", "podgroups/status": "",
		"priorityclasses": "", "leases": "", "roles": "", "rolebindings": "", "clusterroles": "", "clusterrolebindings": "",
		"mutatingwebhookconfigurations": "", "validatingwebhookconfigurations": "", "customresourcedefinitions": "",
		"resourceclaims/status": "", "resourceclaims/binding": "", "resourceclaims/driver": "", "resourceslices": "", "deviceclasses": "",
		"validatingadmissionpolicies": "", "validatingadmissionpolicybindings": "",
	}
	for _, p := range ps {
		if _, bad := forbidden[p.resource]; bad {
			t.Errorf("the tenant role grants %s", p)
		}
		if slices.Contains([]string{"update", "patch", "deletecollection", "escalate", "bind", "impersonate", "*"}, p.verb) {
			t.Errorf("the tenant role grants %s: tenants replace workloads, they do not edit them", p)
		}
		if p.resource == "pods/log" && p.verb != "get" {
			t.Errorf("the tenant role grants %s", p)
		}
	}
	if got := render(t, valuesSet{name: "defaults"}); slices.ContainsFunc(got, func(o object) bool { return o.id() == tenantRole }) {
		t.Error("the tenant role is rendered by default; it is opt-in (tenantRole.create)")
	}
}

// docs/security.md carries the same table as allowedRBAC, row for row.
func TestRBACTableDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	const heading = "## What Tessera's own accounts may do"
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("docs/security.md has no section %q", heading)
	}
	var rows []string
	for _, line := range strings.Split(doc[i:], "\n")[1:] {
		if strings.HasPrefix(line, "## ") {
			break
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if !strings.HasPrefix(strings.TrimSpace(line), "|") || len(cells) != 6 || strings.Contains(line, "---") || strings.Contains(cells[0], "account") {
			continue
		}
		for j := range cells {
			cells[j] = strings.Trim(strings.TrimSpace(cells[j]), "`")
		}
		rows = append(rows, docRow(cells))
	}
	var want []string
	for _, gr := range allowedRBAC {
		scope := "cluster"
		switch {
		case gr.namespaced:
			scope = "Tessera's namespace"
		case gr.serviceAccountOrRole == tenantRole:
			scope = "the tenant's namespaces"
		}
		group := gr.group
		if group == "" {
			group = "core"
		}
		want = append(want, docRow([]string{gr.serviceAccountOrRole, scope, group, strings.Join(gr.resources, ", "), strings.Join(gr.verbs, ", "), strings.Join(gr.names, ", ")}))
	}
	sort.Strings(rows)
	sort.Strings(want)
	for _, w := range want {
		if !slices.Contains(rows, w) {
			t.Errorf("docs/security.md lacks the row %s", w)
		}
	}
	for _, r := range rows {
		if !slices.Contains(want, r) {
			t.Errorf("docs/security.md has the row %s, which the test's table does not", r)
		}
	}
}

// docRow normalises a table row: account, scope, group, resources, verbs, names.
func docRow(cells []string) string {
	norm := func(s string) string {
		var parts []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.Trim(strings.TrimSpace(p), "`"); p != "" && p != "all" {
				parts = append(parts, p)
			}
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprintf("%s | %s | %s | %s | %s | %s", norm(cells[0]), cells[1], cells[2], norm(cells[3]), norm(cells[4]), norm(cells[5]))
}

// guarded are the writes RBAC cannot narrow enough, each held by a ValidatingAdmissionPolicy
// of the chart (docs/security.md, "What stands out"): per ServiceAccount, its policy and
// the resources (group/resource) whose writes the policy must match.
var guarded = []struct {
	serviceAccount, policy, mustMention string
	resources                           []string
}{
	{"tessera-node-agent", "tessera-node-agent-own-node", "authentication.kubernetes.io/node-name",
		[]string{"/nodes", "/nodes/status", "tessera.dev/gpunodes", "tessera.dev/gpunodes/status"}},
	{"tessera-autoscaler", "tessera-autoscaler-idle-reclaim", "object.spec.template == oldObject.spec.template",
		[]string{"apps/deployments", "apps/statefulsets", "batch/jobs"}},
}

// Every values set that binds the node agent or the autoscaler renders its admission
// policy and binding (Deny, failing closed), matching exactly its ServiceAccount's
// requests, and every write RBAC grants it on the guarded resources, for every operation
// the verb stands for.
func TestAdmissionPoliciesGuardWrites(t *testing.T) {
	ops := map[string]string{"create": "CREATE", "update": "UPDATE", "patch": "UPDATE", "delete": "DELETE"}
	for _, s := range valuesSets {
		objs := render(t, s)
		bySA, _ := granted(objs)
		byID := map[string]object{}
		for _, o := range objs {
			byID[o.id()] = o
		}
		for _, gd := range guarded {
			ps, bound := bySA[gd.serviceAccount]
			vap, rendered := byID["ValidatingAdmissionPolicy/"+gd.policy]
			if !bound {
				if rendered {
					t.Errorf("%s: %s rendered without %s", s.name, gd.policy, gd.serviceAccount)
				}
				continue
			}
			if !rendered {
				t.Errorf("%s: %s is bound but its ValidatingAdmissionPolicy %s is not rendered", s.name, gd.serviceAccount, gd.policy)
				continue
			}
			binding := byID["ValidatingAdmissionPolicyBinding/"+gd.policy]
			if str(binding.obj, "spec", "policyName") != gd.policy || fmt.Sprint(get(binding.obj, "spec", "validationActions")) != "[Deny]" {
				t.Errorf("%s: binding of %s: %v, want policyName %s and validationActions [Deny]", s.name, gd.policy, binding.obj["spec"], gd.policy)
			}
			if str(vap.obj, "spec", "failurePolicy") != "Fail" {
				t.Errorf("%s: %s does not fail closed", s.name, gd.policy)
			}
			user := fmt.Sprintf("request.userInfo.username == 'system:serviceaccount:%s:%s'", namespace, gd.serviceAccount)
			conds, _ := get(vap.obj, "spec", "matchConditions").([]any)
			if len(conds) != 1 || str(conds[0].(map[string]any), "expression") != user {
				t.Errorf("%s: %s matchConditions %v, want only %s", s.name, gd.policy, conds, user)
			}
			if body := fmt.Sprint(vap.obj["spec"]); !strings.Contains(body, gd.mustMention) {
				t.Errorf("%s: %s does not check %s", s.name, gd.policy, gd.mustMention)
			}
			matched := map[string]bool{}
			rules, _ := get(vap.obj, "spec", "matchConstraints", "resourceRules").([]any)
			for _, r := range rules {
				r := r.(map[string]any)
				for _, grp := range r["apiGroups"].([]any) {
					for _, res := range r["resources"].([]any) {
						for _, op := range r["operations"].([]any) {
							matched[fmt.Sprint(grp, "/", res, " ", op)] = true
						}
					}
				}
			}
			for _, p := range ps {
				gr := p.group + "/" + p.resource
				if op, write := ops[p.verb]; write && slices.Contains(gd.resources, gr) && !matched[gr+" "+op] {
					t.Errorf("%s: %s may %s, which %s does not match (%s)", s.name, gd.serviceAccount, p, gd.policy, op)
				}
			}
			for _, gr := range gd.resources {
				if !slices.ContainsFunc(ps, func(p perm) bool { _, w := ops[p.verb]; return w && p.group+"/"+p.resource == gr }) {
					t.Errorf("%s: %s may not write %s any more: drop it from the guarded resources", s.name, gd.serviceAccount, gr)
				}
			}
		}
	}
}
