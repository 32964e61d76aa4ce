package volcano

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// JobSetGroupVersion is the JobSet API convert writes (sigs.k8s.io/jobset v0.11).
var JobSetGroupVersion = schema.GroupVersion{Group: "jobset.x-k8s.io", Version: "v1alpha2"}

// JobSet is the part of sigs.k8s.io/jobset's JobSet (api/jobset/v1alpha2, v0.11) that
// convert writes, under the same JSON names. That module's own types link
// controller-runtime, which the simulator, an importer of this package, must not.
type JobSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              JobSetSpec `json:"spec"`
}

// JobSetSpec is the part of a JobSet's spec that convert writes.
type JobSetSpec struct {
	ReplicatedJobs          []ReplicatedJob `json:"replicatedJobs"`
	Network                 *JobSetNetwork  `json:"network,omitempty"`
	SuccessPolicy           *SuccessPolicy  `json:"successPolicy,omitempty"`
	StartupPolicy           *StartupPolicy  `json:"startupPolicy,omitempty"`
	TTLSecondsAfterFinished *int32          `json:"ttlSecondsAfterFinished,omitempty"`
}

// ReplicatedJob is Replicas Jobs made from one template.
type ReplicatedJob struct {
	Name      string                  `json:"name"`
	Replicas  int32                   `json:"replicas"`
	Template  batchv1.JobTemplateSpec `json:"template"`
	DependsOn []DependsOn             `json:"dependsOn,omitempty"`
}

// DependsOn makes a replicated job wait until an earlier one reaches Status.
type DependsOn struct {
	Name   string `json:"name"`
	Status string `json:"status"` // Ready or Complete
}

// JobSetNetwork gives the pods stable hostnames under a headless Service.
type JobSetNetwork struct {
	EnableDNSHostnames       *bool  `json:"enableDNSHostnames,omitempty"`
	Subdomain                string `json:"subdomain,omitempty"`
	PublishNotReadyAddresses *bool  `json:"publishNotReadyAddresses,omitempty"`
}

// SuccessPolicy says which replicated jobs' success completes the JobSet.
type SuccessPolicy struct {
	Operator             string   `json:"operator"` // All or Any
	TargetReplicatedJobs []string `json:"targetReplicatedJobs,omitempty"`
}

// StartupPolicy InOrder makes each replicated job once the one before is ready.
type StartupPolicy struct {
	StartupPolicyOrder string `json:"startupPolicyOrder"` // AnyOrder or InOrder
}

// DeepCopyObject implements runtime.Object.
func (js *JobSet) DeepCopyObject() runtime.Object {
	out := *js
	js.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.ReplicatedJobs = make([]ReplicatedJob, len(js.Spec.ReplicatedJobs))
	for i, rj := range js.Spec.ReplicatedJobs {
		rj.Template.DeepCopyInto(&out.Spec.ReplicatedJobs[i].Template)
		out.Spec.ReplicatedJobs[i].Name, out.Spec.ReplicatedJobs[i].Replicas = rj.Name, rj.Replicas
		out.Spec.ReplicatedJobs[i].DependsOn = slices.Clone(rj.DependsOn)
	}
	if n := js.Spec.Network; n != nil {
		out.Spec.Network = &JobSetNetwork{EnableDNSHostnames: copyPtr(n.EnableDNSHostnames), Subdomain: n.Subdomain, PublishNotReadyAddresses: copyPtr(n.PublishNotReadyAddresses)}
	}
	if p := js.Spec.SuccessPolicy; p != nil {
		out.Spec.SuccessPolicy = &SuccessPolicy{Operator: p.Operator, TargetReplicatedJobs: slices.Clone(p.TargetReplicatedJobs)}
	}
	if p := js.Spec.StartupPolicy; p != nil {
		out.Spec.StartupPolicy = &StartupPolicy{StartupPolicyOrder: p.StartupPolicyOrder}
	}
	out.Spec.TTLSecondsAfterFinished = copyPtr(js.Spec.TTLSecondsAfterFinished)
	return &out
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return ptr.To(*p)
}

// pods are the pod specs of the JobSet's replicated jobs.
func (js *JobSet) pods() []*corev1.PodSpec {
	var out []*corev1.PodSpec
	for i := range js.Spec.ReplicatedJobs {
		out = append(out, &js.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec)
	}
	return out
}

// containers are a pod's containers, and its init containers when init is set.
func containers(p *corev1.PodSpec, init bool) []*corev1.Container {
	var out []*corev1.Container
	for i := range p.Containers {
		out = append(out, &p.Containers[i])
	}
	for i := range p.InitContainers {
		if !init {
			break
		}
		out = append(out, &p.InitContainers[i])
	}
	return out
}

const (
	// maxDependsOn is the most entries a replicated job's dependsOn holds.
	maxDependsOn = 5
	// maxHostLists bounds the host lists written into the svc ConfigMap and the ssh
	// config (Secrets and ConfigMaps hold at most 1 MiB).
	maxHostLists = 256 << 10
	// volcanoDir is where Volcano's svc plugin mounts the host lists.
	volcanoDir = "/etc/volcano"
	// sshDir is where Volcano's ssh plugin mounts the keys by default.
	sshDir = "/root/.ssh"
	// completionIndex is the annotation of an Indexed Job's pod holding its index.
	completionIndex = "batch.kubernetes.io/job-completion-index"
)

// jobSet writes a Volcano Job of several tasks as one JobSet: a replicated job per task
// (one Indexed Job of the task's replicas), the whole JobSet one gang, Volcano's env,
// svc and ssh plugins, TaskCompleted: CompleteJob policies and dependsOn carried. The
// plugins' Secret and ConfigMap come before the JobSet.
func (c *converter) jobSet(j *vcJob) ([]runtime.Object, error) {
	u := j.u
	js := &JobSet{TypeMeta: metav1.TypeMeta{APIVersion: JobSetGroupVersion.String(), Kind: "JobSet"}, ObjectMeta: meta(u, true)}
	if j.queue != "" {
		js.Labels = withEntry(js.Labels, tesserav1.LabelQueue, j.queue)
	}
	if j.gang < j.total {
		js.Annotations = withEntry(js.Annotations, tesserav1.AnnotationMinAvailable, strconv.Itoa(int(j.gang)))
		c.note(u, "spec.minAvailable", "%d of the %d pods: became the JobSet's %s annotation, which Tessera honours as the gang size", j.gang, j.total, tesserav1.AnnotationMinAvailable)
	}
	js.Spec.TTLSecondsAfterFinished = j.ttl
	var succeed []string // the tasks whose completion completes the Volcano Job
	for _, t := range j.tasks {
		longest := fmt.Sprintf("%s-%s-0-%d-xxxxx", u.GetName(), t.name, max(t.replicas-1, 0))
		if errs := validation.IsDNS1035Label(longest); len(errs) > 0 {
			return nil, fmt.Errorf("%s.name: the JobSet would name this task's pods like %s, which is not a valid pod name: %s", t.field, longest, strings.Join(errs, "; "))
		}
		if c.policies(u, t.field+".policies", t.spec, taskPoliciesNote, "this task's") && t.replicas > 0 {
			succeed = append(succeed, t.name)
		}
		c.noteTask(u, t)
		r := t.replicas
		rj := ReplicatedJob{Name: t.name, Replicas: 1, Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Parallelism: &r, Completions: &r, CompletionMode: ptr.To(batchv1.IndexedCompletion), BackoffLimit: t.maxRetry, Template: t.template}}}
		tmpl := &rj.Template.Spec.Template
		if tmpl.Spec.PriorityClassName == "" {
			tmpl.Spec.PriorityClassName = j.priority
		}
		c.podTemplate(u, t.field+".template", tmpl, "", j.queue)
		js.Spec.ReplicatedJobs = append(js.Spec.ReplicatedJobs, rj)
	}
	if c.policies(u, "spec.policies", j.spec, jobPoliciesNote, "any task's") {
		succeed = nil
		for _, t := range j.tasks {
			if t.replicas > 0 {
				succeed = append(succeed, t.name)
			}
		}
	}
	if len(succeed) > 0 {
		js.Spec.SuccessPolicy = &SuccessPolicy{Operator: "Any", TargetReplicatedJobs: succeed}
	}
	if err := c.order(j, js); err != nil {
		return nil, err
	}
	out, err := c.plugins(j, js)
	if err != nil {
		return nil, err
	}
	c.noteJob(j)
	return append(out, js), nil
}

// withEntry returns m (made when nil) with key set to value.
func withEntry(m map[string]string, key, value string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}

// completesJob reports whether a Volcano policy is TaskCompleted: CompleteJob, on that
// event alone and at once.
func completesJob(p any) bool {
	m := mapOf(p)
	list, _ := m["events"].([]any)
	events := slices.Clone(list)
	if e, ok := m["event"]; ok {
		events = append(events, e)
	}
	_, code := m["exitCode"]
	_, timeout := m["timeout"]
	return m["action"] == "CompleteJob" && !code && !timeout && len(events) > 0 &&
		!slices.ContainsFunc(events, func(e any) bool { return e != "TaskCompleted" })
}

// policies notes the Volcano policies of m (a task's or the Job's spec, at field)
// and reports whether one is TaskCompleted: CompleteJob, which becomes the JobSet's
// successPolicy; format notes the others.
func (c *converter) policies(u *unstructured.Unstructured, field string, m map[string]any, format, whose string) bool {
	v, ok := m["policies"]
	if !ok {
		return false
	}
	list, _ := v.([]any)
	rest := slices.DeleteFunc(slices.Clone(list), completesJob)
	done := len(rest) < len(list)
	if done {
		c.note(u, field, "TaskCompleted: CompleteJob became the JobSet's successPolicy (operator Any): the JobSet succeeds once %s pods have all succeeded", whose)
	}
	if !done || len(rest) > 0 {
		c.note(u, field, format, policies(rest))
	}
	return done
}

// order carries the tasks' dependsOn: the replicated jobs in an order where each
// follows those it depends on, and each dependency a dependsOn entry (status Ready),
// or, where dependsOn cannot say it (any one of several tasks, more than
// maxDependsOn), startupPolicy InOrder for the whole JobSet. Volcano waits for
// the pods of the tasks depended on to run; JobSet for them to be ready.
func (c *converter) order(j *vcJob, js *JobSet) error {
	deps := make([][]string, len(j.tasks))
	inOrder, ordered := false, false
	for i, t := range j.tasks {
		d := mapOf(t.spec["dependsOn"])
		names, _ := d["name"].([]any)
		for _, n := range names {
			name := fmt.Sprint(n)
			if name == t.name || !slices.ContainsFunc(j.tasks, func(o vcTask) bool { return o.name == name }) {
				return fmt.Errorf("%s.dependsOn.name: %q is not another task of the Job", t.field, name)
			}
			if !slices.Contains(deps[i], name) {
				deps[i] = append(deps[i], name)
			}
		}
		it, _ := d["iteration"].(string)
		inOrder = inOrder || (it == "any" && len(deps[i]) > 1) || len(deps[i]) > maxDependsOn
		ordered = ordered || len(deps[i]) > 0
	}
	order := make([]int, len(j.tasks)) // the tasks, in the replicated jobs' order
	for i := range order {
		order[i] = i
	}
	if ordered {
		// Place, again and again, the first task whose dependencies are all placed.
		order = order[:0]
		placed := map[string]bool{}
		for len(order) < len(j.tasks) {
			next := -1
			for i, t := range j.tasks {
				if !placed[t.name] && !slices.ContainsFunc(deps[i], func(d string) bool { return !placed[d] }) {
					next = i
					break
				}
			}
			if next < 0 {
				return fmt.Errorf("spec.tasks: the tasks' dependsOn form a cycle, so no task could start")
			}
			placed[j.tasks[next].name] = true
			order = append(order, next)
		}
	}
	rjobs, names := make([]ReplicatedJob, len(order)), make([]string, len(order))
	for k, i := range order {
		rjobs[k], names[k] = js.Spec.ReplicatedJobs[i], j.tasks[i].name
	}
	js.Spec.ReplicatedJobs = rjobs
	first := int32(0) // the pods made before any dependency is ready
	for i, t := range j.tasks {
		d, ok := t.spec["dependsOn"]
		switch {
		case len(deps[i]) == 0:
			if ok {
				c.note(j.u, t.field+".dependsOn", "names no task; left out")
			}
			if !inOrder || i == order[0] {
				first += t.replicas
			}
		case inOrder:
			c.note(j.u, t.field+".dependsOn", "JobSet's dependsOn cannot say %s (it waits for all of at most %d replicated jobs): the JobSet makes its replicated jobs one after another instead, each once the one before is ready (startupPolicy InOrder: %s)", dependsOn(d), maxDependsOn, strings.Join(names, ", "))
		default:
			k := slices.Index(order, i)
			for _, dep := range deps[i] {
				rjobs[k].DependsOn = append(rjobs[k].DependsOn, DependsOn{Name: dep, Status: "Ready"})
			}
			c.note(j.u, t.field+".dependsOn", "became the replicated job's dependsOn (status Ready): its Job is made once those of %s are ready (replicated jobs in the order %s)", strings.Join(deps[i], ", "), strings.Join(names, ", "))
		}
	}
	if inOrder {
		js.Spec.StartupPolicy = &StartupPolicy{StartupPolicyOrder: "InOrder"}
	}
	if ordered && j.gang < j.total && j.gang > first {
		c.note(j.u, "spec.minAvailable", "the gang of %d pods could never start: only %d pods are made before the tasks they depend on are ready; lower minAvailable to %d at most, or leave it out so that Tessera gangs each stage whole", j.gang, first, first)
	}
	return nil
}

// plugins carries Volcano's env, svc and ssh job plugins onto the JobSet and returns
// the objects they need; the other plugins are noted.
func (c *converter) plugins(j *vcJob, js *JobSet) ([]runtime.Object, error) {
	plugins := mapOf(j.spec["plugins"])
	var out []runtime.Object
	if args, ok := plugins["env"]; ok {
		c.pluginArgs(j.u, "env", args, func(*flag.FlagSet) {})
		for _, p := range js.pods() {
			for _, ctr := range containers(p, true) {
				for _, name := range []string{"VK_TASK_INDEX", "VC_TASK_INDEX"} {
					ctr.Env = append(ctr.Env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
						FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + completionIndex + "']"}}})
				}
			}
		}
		c.note(j.u, "spec.plugins.env", "VK_TASK_INDEX and VC_TASK_INDEX, the pod's index in its task, come from its Indexed Job's completion index")
	}
	fit := int64(0)
	for _, t := range j.tasks {
		fit += int64(t.replicas) * int64(2*len(j.u.GetName())+len(t.name)+16)
	}
	if args, ok := plugins["svc"]; ok {
		if cm := c.svc(j, js, args, fit <= maxHostLists); cm != nil {
			out = append(out, cm)
		}
	}
	if args, ok := plugins["ssh"]; ok {
		s, err := c.ssh(j, js, args, fit <= maxHostLists)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	for _, name := range slices.Sorted(maps.Keys(plugins)) {
		if name != "env" && name != "svc" && name != "ssh" {
			c.note(j.u, "spec.plugins."+name, "Volcano's %s plugin is not carried; set the environment it gave the pods in the task templates", name)
		}
	}
	return out, nil
}

// pluginArgs parses a Volcano plugin's arguments as Volcano does (Go flags, defined by
// define); what it cannot parse is noted, and ignored as Volcano ignores it.
func (c *converter) pluginArgs(u *unstructured.Unstructured, plugin string, v any, define func(*flag.FlagSet)) {
	fs := flag.NewFlagSet(plugin, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	define(fs)
	list, _ := v.([]any)
	args := make([]string, len(list))
	for i, a := range list {
		args[i] = fmt.Sprint(a)
	}
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		c.note(u, "spec.plugins."+plugin, "arguments %q not understood; ignored, as Volcano ignores them", args)
	}
}

// hostnames are the hostnames of a task's pods in the JobSet (<jobset>-<replicated
// job>-<job index>-<pod index>), the FQDN of each under the JobSet's subdomain.
func hostnames(js *JobSet, t vcTask) (short, fqdn []string) {
	for i := range t.replicas {
		h := fmt.Sprintf("%s-%s-0-%d", js.Name, t.name, i)
		short, fqdn = append(short, h), append(fqdn, h+"."+js.Spec.Network.Subdomain)
	}
	return short, fqdn
}

// svc carries Volcano's svc plugin: stable hostnames under a headless Service named
// after the Job (JobSet's network), and, when the lists fit, a ConfigMap <job>-svc of
// each task's hosts mounted at /etc/volcano (<task>.host) and read into the
// VC_<TASK>_HOSTS and VC_<TASK>_NUM variables, as Volcano's plugin does.
func (c *converter) svc(j *vcJob, js *JobSet, args any, fit bool) *corev1.ConfigMap {
	u := j.u
	var publish, noPolicy bool
	c.pluginArgs(u, "svc", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&publish, "publish-not-ready-addresses", false, "")
		fs.BoolVar(&noPolicy, "disable-network-policy", false, "")
	})
	js.Spec.Network = &JobSetNetwork{EnableDNSHostnames: ptr.To(true), Subdomain: u.GetName(), PublishNotReadyAddresses: ptr.To(publish)}
	text := fmt.Sprintf("became the JobSet's network, whose controller makes the headless Service %s; hostnames change from Volcano's %s-<task>-<index>.%s to %s-<task>-0-<index>.%s (<jobset>-<replicated job>-<job index>-<pod index>.<subdomain>): update the names your commands spell out",
		u.GetName(), u.GetName(), u.GetName(), u.GetName(), u.GetName())
	if !noPolicy {
		text += fmt.Sprintf("; Volcano's NetworkPolicy admitting only the Job's own pods is not made: add one selecting jobset.sigs.k8s.io/jobset-name=%s if you need it", u.GetName())
	}
	if !fit {
		c.note(u, "spec.plugins.svc", "%s; the host lists of %d pods are too long for a ConfigMap, so /etc/volcano and VC_<TASK>_HOSTS / VC_<TASK>_NUM are not made", text, j.total)
		return nil
	}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: u.GetName() + "-svc", Namespace: u.GetNamespace(), Labels: u.GetLabels()}, Data: map[string]string{}}
	var env []corev1.EnvVar
	for _, t := range j.tasks {
		key := strings.ReplaceAll(t.name, "-", "_")
		_, hosts := hostnames(js, t)
		cm.Data[key+".host"] = strings.Join(hosts, "\n")
		for name, value := range map[string]string{"VC_%s_HOSTS": strings.Join(hosts, ","), "VC_%s_NUM": strconv.Itoa(len(hosts))} {
			name = fmt.Sprintf(name, strings.ToUpper(key))
			cm.Data[name] = value
			env = append(env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}, Key: name}}})
		}
	}
	slices.SortStableFunc(env, func(a, b corev1.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range js.pods() {
		p.Volumes = append(p.Volumes, corev1.Volume{Name: cm.Name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}})
		for _, ctr := range containers(p, true) {
			ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: cm.Name, MountPath: volcanoDir})
			ctr.Env = append(ctr.Env, env...)
		}
	}
	c.note(u, "spec.plugins.svc", "%s; the ConfigMap %s lists each task's new hostnames in %s/<task>.host and VC_<TASK>_HOSTS / VC_<TASK>_NUM, as Volcano's svc plugin does", text, cm.Name, volcanoDir)
	return cm
}

// ssh carries Volcano's ssh plugin: a Secret <job>-ssh of a key pair made now, an
// authorized_keys and an ssh config, mounted in every container at /root/.ssh (or the
// plugin's --ssh-key-file-path), as Volcano's plugin does. With svc, the config maps
// each pod's hostname to its name under the subdomain.
func (c *converter) ssh(j *vcJob, js *JobSet, args any, fit bool) (*corev1.Secret, error) {
	u := j.u
	dir, noRoot := sshDir, false
	c.pluginArgs(u, "ssh", args, func(fs *flag.FlagSet) {
		fs.StringVar(&dir, "ssh-key-file-path", sshDir, "")
		fs.BoolVar(&noRoot, "no-root", false, "")
	})
	if noRoot && dir == sshDir {
		dir = volcanoDir + "/.ssh"
	}
	mode := int32(0o600)
	if dir != sshDir {
		mode = 0o755 // as Volcano: readable by a user other than root
	}
	private, public, err := newSSHKeyPair()
	if err != nil {
		return nil, fmt.Errorf("spec.plugins.ssh: %w", err)
	}
	var config strings.Builder
	config.WriteString("StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n")
	for _, t := range j.tasks {
		if js.Spec.Network != nil && fit {
			short, fqdn := hostnames(js, t)
			for i := range short {
				fmt.Fprintf(&config, "Host %s\n  HostName %s\n", short[i], fqdn[i])
			}
		}
	}
	s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: u.GetName() + "-ssh", Namespace: u.GetNamespace(), Labels: u.GetLabels()},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public, "config": []byte(config.String())}}
	for _, p := range js.pods() {
		p.Volumes = append(p.Volumes, corev1.Volume{Name: s.Name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s.Name, DefaultMode: &mode}}})
		for _, ctr := range containers(p, false) {
			ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: s.Name, MountPath: dir})
		}
	}
	c.note(u, "spec.plugins.ssh", "became the Secret %s of a key pair made now (id_rsa, id_rsa.pub, authorized_keys, config), mounted at %s in every container as Volcano's ssh plugin does; the private key is in the output: keep the file out of Git, or seal the Secret", s.Name, dir)
	return s, nil
}
