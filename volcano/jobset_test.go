package volcano_test

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"math/big"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/golden"
	"github.com/tessera-gpu/tessera/volcano"
)

// convertJobSet converts objs with JobSets on, and returns the output by kind/name and
// the notes as text.
func convertJobSet(t *testing.T, objs []*unstructured.Unstructured) (map[string]runtime.Object, string) {
	t.Helper()
	out, notes, err := volcano.Convert(objs, volcano.Options{JobSet: true})
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, n := range notes {
		text = append(text, n.String())
	}
	return strictDecode(t, out), strings.Join(text, "\n")
}

// TestConvertJobSetGolden: Volcano's MPI, TensorFlow and task-dependency examples
// become what testdata/jobset/ shows, with its notes; the Secret's key pair, made anew
// each time, is shown as <generated>.
func TestConvertJobSetGolden(t *testing.T) {
	for _, name := range []string{"mpi-example", "tf-example", "mpi-depends-on"} {
		t.Run(name, func(t *testing.T) {
			out, notes, err := volcano.Convert(readFixture(t, filepath.Join("testdata", name+".yaml")), volcano.Options{JobSet: true})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			fmt.Fprintf(&b, "# tessera convert volcano testdata/%s.yaml (TestConvertJobSetGolden)\n", name)
			for _, n := range notes {
				fmt.Fprintf(&b, "# note: %s\n", n)
			}
			for _, o := range out {
				if s, ok := o.(*corev1.Secret); ok {
					s = s.DeepCopy()
					s.StringData = map[string]string{"config": string(s.Data["config"])}
					for k := range s.Data {
						if k != "config" {
							s.StringData[k] = "<generated>"
						}
					}
					s.Data, o = nil, s
				}
				y, err := yaml.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				b.WriteString("---\n")
				b.Write(y)
			}
			golden.Check(t, filepath.Join("testdata", "jobset", name+".yaml"), b.Bytes())
		})
	}
}

// TestConvertJobSetMPI: Volcano's MPI example becomes one JobSet, a gang of all its
// pods with no PodGroup; svc becomes JobSet's network and a ConfigMap of the hosts at
// /etc/volcano, ssh a Secret of a fresh key pair at /root/.ssh, and the master's
// TaskCompleted: CompleteJob the success policy.
func TestConvertJobSetMPI(t *testing.T) {
	objs := readFixture(t, "testdata/mpi-example.yaml")
	out, notes := convertJobSet(t, objs)
	if len(out) != 3 {
		t.Fatalf("want a JobSet, a Secret and a ConfigMap, got %v", slices.Sorted(func(yield func(string) bool) {
			for k := range out {
				yield(k)
			}
		}))
	}
	js := out["JobSet/lm-mpi-job"].(*volcano.JobSet)
	if len(js.Spec.ReplicatedJobs) != 2 || js.Annotations[tesserav1.AnnotationMinAvailable] != "" {
		t.Fatalf("JobSet: %+v", js)
	}
	for i, want := range []struct {
		name     string
		replicas int32
	}{{"mpimaster", 1}, {"mpiworker", 2}} {
		rj := js.Spec.ReplicatedJobs[i]
		spec := rj.Template.Spec
		if rj.Name != want.name || rj.Replicas != 1 || *spec.Parallelism != want.replicas || *spec.Completions != want.replicas ||
			*spec.CompletionMode != batchv1.IndexedCompletion || spec.Template.Spec.SchedulerName != tesserav1.SchedulerName {
			t.Errorf("replicated job %d: %+v", i, rj)
		}
		pod := spec.Template.Spec
		mounts := map[string]corev1.VolumeMount{}
		for _, m := range pod.Containers[0].VolumeMounts {
			mounts[m.Name] = m
		}
		if mounts["lm-mpi-job-ssh"].MountPath != "/root/.ssh" || mounts["lm-mpi-job-svc"].MountPath != "/etc/volcano" {
			t.Errorf("%s mounts %+v", rj.Name, mounts)
		}
		for _, v := range pod.Volumes {
			if v.Secret != nil && (v.Secret.SecretName != "lm-mpi-job-ssh" || *v.Secret.DefaultMode != 0o600) {
				t.Errorf("%s: ssh volume %+v", rj.Name, v.Secret)
			}
		}
	}
	if n := js.Spec.Network; n == nil || !*n.EnableDNSHostnames || n.Subdomain != "lm-mpi-job" {
		t.Errorf("network %+v", n)
	}
	if p := js.Spec.SuccessPolicy; p == nil || p.Operator != "Any" || !slices.Equal(p.TargetReplicatedJobs, []string{"mpimaster"}) {
		t.Errorf("success policy %+v", p)
	}
	cm := out["ConfigMap/lm-mpi-job-svc"].(*corev1.ConfigMap)
	if got := cm.Data["mpiworker.host"]; got != "lm-mpi-job-mpiworker-0-0.lm-mpi-job\nlm-mpi-job-mpiworker-0-1.lm-mpi-job" {
		t.Errorf("mpiworker.host %q", got)
	}
	if cm.Data["VC_MPIWORKER_NUM"] != "2" {
		t.Errorf("ConfigMap %v", cm.Data)
	}
	s := out["Secret/lm-mpi-job-ssh"].(*corev1.Secret)
	checkKeyPair(t, s)
	if !strings.HasPrefix(string(s.Data["config"]), "StrictHostKeyChecking no\n") ||
		!strings.Contains(string(s.Data["config"]), "Host lm-mpi-job-mpiworker-0-1\n  HostName lm-mpi-job-mpiworker-0-1.lm-mpi-job\n") {
		t.Errorf("ssh config:\n%s", s.Data["config"])
	}
	cp := js.DeepCopyObject().(*volcano.JobSet)
	if !reflect.DeepEqual(cp, js) {
		t.Error("DeepCopyObject loses what it copies")
	}
	cp.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image = "changed"
	cp.Spec.SuccessPolicy.TargetReplicatedJobs[0] = "changed"
	if js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image == "changed" || js.Spec.SuccessPolicy.TargetReplicatedJobs[0] == "changed" {
		t.Error("DeepCopyObject shares what it copies")
	}
	again, _ := convertJobSet(t, objs)
	if bytes.Equal(again["Secret/lm-mpi-job-ssh"].(*corev1.Secret).Data["id_rsa"], s.Data["id_rsa"]) {
		t.Error("two conversions made the same key")
	}
	for _, want := range []string{"hostnames change from Volcano's lm-mpi-job-<task>-<index>.lm-mpi-job", "/etc/volcano/<task>.host", "the private key is in the output"} {
		if !strings.Contains(notes, want) {
			t.Errorf("no note %q in:\n%s", want, notes)
		}
	}
}

// checkKeyPair checks the ssh Secret's keys: a PEM RSA private key, and its public key
// as OpenSSH writes it, in id_rsa.pub and authorized_keys.
func checkKeyPair(t *testing.T, s *corev1.Secret) {
	t.Helper()
	block, _ := pem.Decode(s.Data["id_rsa"])
	if block == nil || block.Type != "RSA PRIVATE KEY" {
		t.Fatalf("id_rsa: %q", s.Data["id_rsa"])
	}
	key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.Data["id_rsa.pub"], s.Data["authorized_keys"]) {
		t.Error("authorized_keys is not id_rsa.pub")
	}
	algo, b64, ok := strings.Cut(strings.TrimSuffix(string(s.Data["id_rsa.pub"]), "\n"), " ")
	wire, err := base64.StdEncoding.DecodeString(b64)
	if !ok || algo != "ssh-rsa" || err != nil {
		t.Fatalf("id_rsa.pub: %q", s.Data["id_rsa.pub"])
	}
	var fields [][]byte
	for len(wire) >= 4 {
		n := binary.BigEndian.Uint32(wire)
		if uint32(len(wire)-4) < n {
			break
		}
		fields, wire = append(fields, wire[4:4+n]), wire[4+n:]
	}
	if len(fields) != 3 || string(fields[0]) != "ssh-rsa" || len(wire) != 0 || fields[2][0] != 0 ||
		new(big.Int).SetBytes(fields[1]).Int64() != int64(key.E) || new(big.Int).SetBytes(fields[2]).Cmp(key.N) != 0 {
		t.Errorf("id_rsa.pub does not hold the private key's e and n: %q", s.Data["id_rsa.pub"])
	}
}

// TestSingleTaskJobsUnchanged: with JobSets on, everything but a Volcano Job of several
// tasks converts exactly as before.
func TestSingleTaskJobsUnchanged(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.yaml")
	single := 0
	for _, f := range files {
		for _, u := range readFixture(t, f) {
			if tasks, _, _ := unstructured.NestedSlice(u.Object, "spec", "tasks"); u.GetKind() == "Job" && len(tasks) > 1 {
				continue
			}
			if tasks, _, _ := unstructured.NestedSlice(u.Object, "spec", "tasks"); len(tasks) == 1 {
				single++
			}
			var got [2]string
			for i, jobSet := range []bool{false, true} {
				out, notes, err := volcano.Convert([]*unstructured.Unstructured{u}, volcano.Options{JobSet: jobSet})
				if err != nil {
					t.Fatal(err)
				}
				y, _ := yaml.Marshal(out)
				got[i] = fmt.Sprint(string(y), notes)
			}
			if got[0] != got[1] {
				t.Errorf("%s: %s %s converts otherwise with JobSets:\n%s\n---\n%s", f, u.GetKind(), u.GetName(), got[0], got[1])
			}
		}
	}
	if single == 0 {
		t.Error("no single-task Volcano Job in the fixtures")
	}
}

// twoTasks is a Volcano Job of two tasks, a and b, with the given spec fields
// (indented two spaces) and fields of a and of b (indented six spaces).
func twoTasks(spec, a, b string) string {
	task := func(name, fields string) string {
		return "    - name: " + name + "\n      replicas: 2\n" + fields + "      template:\n        spec:\n          containers:\n            - {name: main, image: trainer}\n"
	}
	return "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n  name: train\n  namespace: research\n  labels: {app: train}\nspec:\n  queue: q\n" +
		spec + "  tasks:\n" + task("a", a) + task("b", b)
}

// TestConvertJobSetCases: each case of a multi-task Volcano Job becomes the JobSet it
// should, or an error naming the field, with the notes the operator needs.
func TestConvertJobSetCases(t *testing.T) {
	jobSet := func(o []runtime.Object) *volcano.JobSet { return o[len(o)-1].(*volcano.JobSet) }
	for _, tc := range []conversionCase{
		{name: "queue, priority class, TTL and retries carried; no PodGroup",
			input: twoTasks("  priorityClassName: high\n  ttlSecondsAfterFinished: 60\n  maxRetry: 2\n", "      maxRetry: 5\n", ""),
			check: func(o []runtime.Object) bool {
				js := jobSet(o)
				a, b := js.Spec.ReplicatedJobs[0].Template, js.Spec.ReplicatedJobs[1].Template
				return len(o) == 1 && js.Labels[tesserav1.LabelQueue] == "q" && js.Labels["app"] == "train" && *js.Spec.TTLSecondsAfterFinished == 60 &&
					*a.Spec.BackoffLimit == 5 && *b.Spec.BackoffLimit == 2 && b.Spec.Template.Spec.PriorityClassName == "high" &&
					b.Spec.Template.Labels[tesserav1.LabelQueue] == "q" && b.Spec.Template.Labels[tesserav1.LabelPodGroup] == ""
			}},
		{name: "a gang smaller than the pods becomes the annotation",
			input: twoTasks("  minAvailable: 3\n", "", ""),
			notes: []string{"spec.minAvailable: 3 of the 4 pods: became the JobSet's tessera.dev/min-available annotation, which Tessera honours as the gang size"},
			check: func(o []runtime.Object) bool { return jobSet(o).Annotations[tesserav1.AnnotationMinAvailable] == "3" }},
		{name: "a job-level CompleteJob targets every task with pods",
			input: twoTasks("  policies:\n    - {event: TaskCompleted, action: CompleteJob}\n    - {event: PodEvicted, action: RestartJob}\n", "", ""),
			notes: []string{"spec.policies: TaskCompleted: CompleteJob became the JobSet's successPolicy", "spec.policies: Volcano job policies [PodEvicted: RestartJob] have no Tessera equivalent"},
			check: func(o []runtime.Object) bool {
				p := jobSet(o).Spec.SuccessPolicy
				return p.Operator == "Any" && slices.Equal(p.TargetReplicatedJobs, []string{"a", "b"})
			}},
		{name: "CompleteJob after a timeout is not a success policy",
			input: twoTasks("", "      policies:\n        - {event: TaskCompleted, action: CompleteJob, timeout: 5m}\n", ""),
			notes: []string{"Volcano task policies [TaskCompleted: CompleteJob after 5m] have no Tessera equivalent"},
			check: func(o []runtime.Object) bool { return jobSet(o).Spec.SuccessPolicy == nil }},
		{name: "dependsOn becomes JobSet's, after the task it waits for",
			input: twoTasks("", "      dependsOn: {name: [b]}\n", ""),
			notes: []string{"spec.tasks[0].dependsOn: became the replicated job's dependsOn (status Ready): its Job is made once those of b are ready (replicated jobs in the order b, a)"},
			check: func(o []runtime.Object) bool {
				rjs := jobSet(o).Spec.ReplicatedJobs
				return rjs[0].Name == "b" && rjs[1].Name == "a" && len(rjs[0].DependsOn) == 0 &&
					slices.Equal(rjs[1].DependsOn, []volcano.DependsOn{{Name: "b", Status: "Ready"}}) && jobSet(o).Spec.StartupPolicy == nil
			}},
		{name: "dependsOn any of several tasks becomes startupPolicy InOrder",
			input: strings.Replace(twoTasks("", "", ""), "  tasks:\n", "  tasks:\n    - name: c\n      replicas: 1\n      dependsOn: {name: [a, b], iteration: any}\n      template: {spec: {containers: [{name: c, image: i}]}}\n", 1),
			notes: []string{"spec.tasks[0].dependsOn: JobSet's dependsOn cannot say a, b (any)", "(startupPolicy InOrder: a, b, c)"},
			check: func(o []runtime.Object) bool {
				js := jobSet(o)
				return js.Spec.StartupPolicy.StartupPolicyOrder == "InOrder" && js.Spec.ReplicatedJobs[2].Name == "c" &&
					!slices.ContainsFunc(js.Spec.ReplicatedJobs, func(rj volcano.ReplicatedJob) bool { return len(rj.DependsOn) > 0 })
			}},
		{name: "a gang larger than the first stage is noted",
			input: twoTasks("  minAvailable: 3\n", "      dependsOn: {name: [b]}\n", ""),
			notes: []string{"spec.minAvailable: the gang of 3 pods could never start: only 2 pods are made before the tasks they depend on are ready"}},
		{name: "dependsOn on an unknown task", input: twoTasks("", "      dependsOn: {name: [c]}\n", ""), err: `spec.tasks[0].dependsOn.name: "c" is not another task of the Job`},
		{name: "dependsOn on itself", input: twoTasks("", "      dependsOn: {name: [a]}\n", ""), err: `spec.tasks[0].dependsOn.name: "a" is not another task`},
		{name: "a dependency cycle", input: twoTasks("", "      dependsOn: {name: [b]}\n", "      dependsOn: {name: [a]}\n"), err: "the tasks' dependsOn form a cycle"},
		{name: "a name too long for the JobSet's pods", input: strings.Replace(twoTasks("", "", ""), "name: train", "name: "+strings.Repeat("t", 55), 1),
			err: "spec.tasks[0].name: the JobSet would name this task's pods like " + strings.Repeat("t", 55) + "-a-0-1-xxxxx, which is not a valid pod name"},
		{name: "ssh at another path, svc publishing addresses, other plugins noted",
			input: twoTasks("  plugins:\n    ssh: [--ssh-key-file-path=/home/mpi/.ssh]\n    svc: [--publish-not-ready-addresses, --disable-network-policy]\n    pytorch: [--port=23456]\n", "", ""),
			notes: []string{"spec.plugins.ssh: became the Secret train-ssh", "mounted at /home/mpi/.ssh", "spec.plugins.pytorch: Volcano's pytorch plugin is not carried"},
			check: func(o []runtime.Object) bool {
				js := jobSet(o)
				pod := js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec
				ssh := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "train-ssh" })
				return *js.Spec.Network.PublishNotReadyAddresses && ssh >= 0 && *pod.Volumes[ssh].Secret.DefaultMode == 0o755 &&
					slices.ContainsFunc(pod.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/home/mpi/.ssh" }) &&
					o[0].(*corev1.ConfigMap).Labels["app"] == "train" && o[1].(*corev1.Secret).Namespace == "research"
			}},
		{name: "plugin arguments Volcano would not parse are noted",
			input: twoTasks("  plugins:\n    svc: [--nonsense]\n", "", ""),
			notes: []string{`spec.plugins.svc: arguments ["--nonsense"] not understood; ignored, as Volcano ignores them`}},
		{name: "host lists too long for a ConfigMap are left out",
			input: strings.Replace(twoTasks("  plugins:\n    svc: []\n", "", ""), "replicas: 2", "replicas: 100000", 1),
			notes: []string{"the host lists of 100002 pods are too long for a ConfigMap"},
			check: func(o []runtime.Object) bool { return len(o) == 1 && jobSet(o).Spec.Network != nil }},
		{name: "env plugin: the task index from the completion index",
			input: twoTasks("  plugins:\n    env: []\n", "", ""),
			check: func(o []runtime.Object) bool {
				env := jobSet(o).Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Env
				return len(env) == 2 && env[0].Name == "VK_TASK_INDEX" && env[1].ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := tc.convert(t, volcano.Options{JobSet: true})
			if !ok {
				return
			}
			if tc.check != nil && !tc.check(out) {
				y, _ := yaml.Marshal(out)
				t.Errorf("unexpected output:\n%s", y)
			}
			strictDecode(t, out)
		})
	}
}
