package docs

// docs/gpu-delivery.md shows, for each of Tessera's DeviceClasses, a ResourceClaimTemplate
// and a Pod that uses it. They are checked against a real API server, which serves
// resource.k8s.io/v1, with the chart's DeviceClasses (as the kustomize base renders
// them) installed: each decodes strictly into its Go type and is accepted by a
// server-side dry run with strict field validation; the templates name Tessera's
// classes, a share names its memory, and the pods are Tessera's to schedule.

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/test/testenv"
)

const (
	gpuDeliveryPage = "../../docs/gpu-delivery.md"
	// chartDeviceClasses are the chart's DeviceClasses as `make generate` renders them.
	chartDeviceClasses = "../../deploy/kustomize/base/dra/deviceclasses.yaml"
	// examplesNamespace is where the examples are applied.
	examplesNamespace = "team-a"
)

func TestGPUDeliveryClaimExamples(t *testing.T) {
	_, blocks, _ := readPage(t, gpuDeliveryPage)
	var examples []manifest
	for _, block := range blocks {
		for _, m := range block {
			if m.obj.GetAPIVersion() != "" { // the other blocks are configuration files
				examples = append(examples, m)
			}
		}
	}
	templates := map[string]bool{}
	classes := map[string]bool{}
	for _, m := range examples {
		switch m.obj.GetKind() {
		case "ResourceClaimTemplate":
			var tpl resourcev1.ResourceClaimTemplate
			if err := yaml.UnmarshalStrict(m.raw, &tpl); err != nil {
				t.Errorf("%s:%d: ResourceClaimTemplate %s: %v", gpuDeliveryPage, m.line, m.obj.GetName(), err)
				continue
			}
			templates[tpl.Name] = true
			for _, r := range tpl.Spec.Spec.Devices.Requests {
				class := ""
				if r.Exactly != nil {
					class = r.Exactly.DeviceClassName
				}
				classes[class] = true
				switch {
				case class != tesserav1.DeviceClassGPU && class != tesserav1.DeviceClassGPUShare:
					t.Errorf("%s:%d: request %s names device class %q, not one of Tessera's (%s, %s)", gpuDeliveryPage, m.line, r.Name, class, tesserav1.DeviceClassGPU, tesserav1.DeviceClassGPUShare)
				case class == tesserav1.DeviceClassGPUShare && shareMemory(r.Exactly).IsZero():
					t.Errorf("%s:%d: request %s asks a share without capacity.requests.%s", gpuDeliveryPage, m.line, r.Name, tesserav1.DeviceCapacityMemory)
				}
			}
		case "Pod":
			var pod corev1.Pod
			if err := yaml.UnmarshalStrict(m.raw, &pod); err != nil {
				t.Errorf("%s:%d: Pod %s: %v", gpuDeliveryPage, m.line, m.obj.GetName(), err)
				continue
			}
			if pod.Spec.SchedulerName != tesserav1.SchedulerName {
				t.Errorf("%s:%d: Pod %s: schedulerName %q; a pod with Tessera's claims must name %s", gpuDeliveryPage, m.line, pod.Name, pod.Spec.SchedulerName, tesserav1.SchedulerName)
			}
			for _, c := range pod.Spec.ResourceClaims {
				if c.ResourceClaimTemplateName == nil || !templates[*c.ResourceClaimTemplateName] {
					t.Errorf("%s:%d: Pod %s: claim %s names no template shown before it", gpuDeliveryPage, m.line, pod.Name, c.Name)
				}
			}
		default:
			t.Errorf("%s:%d: %s %s: the page's examples are ResourceClaimTemplates and Pods", gpuDeliveryPage, m.line, m.obj.GetKind(), m.obj.GetName())
		}
	}
	for _, class := range []string{tesserav1.DeviceClassGPU, tesserav1.DeviceClassGPUShare} {
		if !classes[class] {
			t.Errorf("%s: no example of device class %s", gpuDeliveryPage, class)
		}
	}

	e := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t, time.Minute)
	if err := e.Apply(ctx, chartDeviceClasses); err != nil {
		t.Fatalf("the chart's DeviceClasses: %v", err)
	}
	for _, class := range []string{tesserav1.DeviceClassGPU, tesserav1.DeviceClassGPUShare} {
		if err := e.Client.Get(ctx, client.ObjectKey{Name: class}, &resourcev1.DeviceClass{}); err != nil {
			t.Errorf("the chart has no DeviceClass %s: %v", class, err)
		}
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: examplesNamespace}}); err != nil {
		t.Fatal(err)
	}
	for _, m := range examples {
		o := m.obj.DeepCopy()
		o.SetNamespace(examplesNamespace)
		if err := e.Client.Create(ctx, o, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
			t.Errorf("%s:%d: the API server refuses %s %s: %v", gpuDeliveryPage, m.line, o.GetKind(), o.GetName(), err)
		}
	}
	if len(examples) == 0 || !slices.ContainsFunc(examples, func(m manifest) bool { return m.obj.GetKind() == "Pod" }) {
		t.Errorf("%s: no Pod and ResourceClaimTemplate examples", gpuDeliveryPage)
	}
}

// shareMemory is the memory a request asks of the GPU's capacity; zero when it names none.
func shareMemory(r *resourcev1.ExactDeviceRequest) *resource.Quantity {
	var q resource.Quantity
	if r.Capacity != nil {
		q = r.Capacity.Requests[tesserav1.DeviceCapacityMemory]
	}
	return &q
}
