package volcano_test

import (
	"os"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/volcano"
)

func readFixture(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := volcano.Read(b, path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConvert converts a Volcano Queue, PodGroup, Volcano Job and annotated batch Job,
// checks what each became, that every output decodes strictly as Tessera's or
// Kubernetes' kind, and that what could not be carried is noted.
func TestConvert(t *testing.T) {
	objs, notes, err := volcano.Convert(readFixture(t, "testdata/volcano.yaml"), volcano.Options{RewriteNvidiaGPU: true})
	if err != nil {
		t.Fatal(err)
	}
	byName := strictDecode(t, objs)
	q := byName["Queue/train-prod"].(*tesserav1.Queue)
	if q.Spec.Weight != 2 || q.Spec.Capability.Name(tesserav1.ResourceGPU, "").Value() != 20 || q.Spec.Deserved.Name(tesserav1.ResourceGPU, "").Value() != 15 ||
		q.Spec.Guarantee.Name(tesserav1.ResourceGPU, "").Value() != 4 || q.Spec.Reclaimable == nil || !*q.Spec.Reclaimable {
		t.Errorf("queue: %+v", q.Spec)
	}
	if pg := byName["PodGroup/pg-1"].(*tesserav1.PodGroup); pg.Spec.MinMember != 4 || pg.Spec.Queue != "train-prod" || pg.Spec.PriorityClassName != "batch-normal" {
		t.Errorf("podgroup: %+v", pg.Spec)
	}
	if pg := byName["PodGroup/pretrain"].(*tesserav1.PodGroup); pg.Spec.MinMember != 3 || pg.Spec.Queue != "train-prod" || pg.Spec.PriorityClassName != "production-high" {
		t.Errorf("volcano job's podgroup: %+v", pg.Spec)
	}
	worker := byName["Job/pretrain-worker"].(*batchv1.Job)
	tmpl := worker.Spec.Template
	if *worker.Spec.Parallelism != 2 || *worker.Spec.BackoffLimit != 3 || tmpl.Spec.SchedulerName != tesserav1.SchedulerName ||
		tmpl.Labels[tesserav1.LabelPodGroup] != "pretrain" || tmpl.Labels[tesserav1.LabelQueue] != "train-prod" {
		t.Errorf("worker job: %+v", worker.Spec)
	}
	limits := tmpl.Spec.Containers[0].Resources.Limits
	if limits.Name(tesserav1.ResourceGPU, "").Value() != 8 || limits.Name(tesserav1.ResourceGPUMemory, "").Value() != 1024 {
		t.Errorf("worker limits %v", limits)
	}
	ft := byName["Job/finetune"].(*batchv1.Job)
	if ft.Annotations[tesserav1.AnnotationMinAvailable] != "2" || ft.Spec.Template.Labels[tesserav1.LabelQueue] != "train-dev" ||
		ft.Spec.Template.Labels[tesserav1.LabelPodGroup] != "finetune" || ft.Spec.Template.Spec.SchedulerName != tesserav1.SchedulerName {
		t.Errorf("annotated batch job: %+v / %+v", ft.ObjectMeta, ft.Spec.Template.ObjectMeta)
	}
	var all []string
	for _, n := range notes {
		all = append(all, n.String())
	}
	text := strings.Join(all, "\n")
	for _, want := range []string{"Queue train-prod: spec.extendClusters", "Job research/pretrain: spec.policies", "spec.tasks[1].policies", "spec.plugins", "nvidia.com/gpu became tessera.dev/gpu"} {
		if !strings.Contains(text, want) {
			t.Errorf("no note %q in:\n%s", want, text)
		}
	}
}

// strictDecode checks that every output decodes strictly as Tessera's or Kubernetes'
// kind (or as the JobSet convert writes) and returns them by kind/name.
func strictDecode(t *testing.T, objs []runtime.Object) map[string]runtime.Object {
	t.Helper()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = tesserav1.AddToScheme(scheme)
	scheme.AddKnownTypes(volcano.JobSetGroupVersion, &volcano.JobSet{})
	strict := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	byName := map[string]runtime.Object{}
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		decoded, gvk, err := strict.Decode(b, nil, nil)
		if err != nil {
			t.Fatalf("output does not decode strictly: %v\n%s", err, b)
		}
		byName[gvk.Kind+"/"+decoded.(interface{ GetName() string }).GetName()] = decoded
	}
	return byName
}
