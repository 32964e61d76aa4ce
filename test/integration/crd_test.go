package integration

import (
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

func decode(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatalf("test YAML: %v", err)
	}
	return obj
}

func TestCRDsInstalled(t *testing.T) {
	e := requireEnv(t)
	ctx := t.Context()
	want := []string{"queues", "podgroups", "gpunodes", "scaledownpolicies", "admissionpolicies"}
	for _, plural := range want {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: plural + "." + tesserav1.GroupVersion.Group}, crd); err != nil {
			t.Errorf("CRD %s: %v", plural, err)
			continue
		}
		established := false
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				established = true
			}
		}
		if !established {
			t.Errorf("CRD %s is not Established", plural)
		}
	}
}

const validObjects = `
apiVersion: tessera.dev/v1alpha1
kind: Queue
metadata: {name: train-prod}
spec:
  weight: 2
  deserved: {tessera.dev/gpu: "15"}
  capability: {tessera.dev/gpu: "20", cpu: "400"}
  guarantee: {tessera.dev/gpu: "4"}
---
apiVersion: tessera.dev/v1alpha1
kind: PodGroup
metadata: {name: pretrain, namespace: default}
spec:
  minMember: 4
  queue: train-prod
  priorityClassName: production-high
  minResources: {tessera.dev/gpu: "32"}
  topology: {required: tessera.dev/rack, preferred: topology.kubernetes.io/zone}
  minRuntime: 10m
---
apiVersion: tessera.dev/v1alpha1
kind: GPUNode
metadata: {name: gpu-node-1}
---
apiVersion: tessera.dev/v1alpha1
kind: ScaleDownPolicy
metadata: {name: idle-gpus}
spec:
  nodeSelector: {matchLabels: {tessera.dev/gpu-model: A100-80GB}}
  idleAfter: 45m
  gpuUtilizationThreshold: 3
  maxParallel: 2
  cooldown: 5m
  minNodes: 1
  pricePerGPUHour: "2.21"
  dryRun: true
---
apiVersion: tessera.dev/v1alpha1
kind: AdmissionPolicy
metadata: {name: team-defaults}
spec:
  rego: |
    package tessera.custom
    deny contains msg if { false; msg := "never" }
  targets: [Pod, Job]
  enforcement: warn
  order: 10
`

func TestValidObjectsAccepted(t *testing.T) {
	e := requireEnv(t)
	ctx := t.Context()
	for _, doc := range strings.Split(validObjects, "\n---\n") {
		obj := decode(t, doc)
		if err := e.Client.Create(ctx, obj); err != nil {
			t.Errorf("create %s %s: %v", obj.GetKind(), obj.GetName(), err)
			continue
		}
		t.Cleanup(func() { _ = e.Client.Delete(ctx, obj) })
	}
	// Defaults are applied by the API server.
	q := &tesserav1.Queue{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "train-prod"}, q); err != nil {
		t.Fatal(err)
	}
	if q.Spec.Reclaimable == nil || !*q.Spec.Reclaimable {
		t.Errorf("spec.reclaimable default: got %v, want true", q.Spec.Reclaimable)
	}
	p := &tesserav1.ScaleDownPolicy{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "idle-gpus"}, p); err != nil {
		t.Fatal(err)
	}
	if p.Spec.IdleAfter.Duration != 45*time.Minute || p.Spec.Cooldown.Duration != 5*time.Minute {
		t.Errorf("durations: got idleAfter %v cooldown %v", p.Spec.IdleAfter, p.Spec.Cooldown)
	}
}

func TestGPUNodeStatus(t *testing.T) {
	e := requireEnv(t)
	ctx := t.Context()
	n := &tesserav1.GPUNode{}
	n.Name = "status-node"
	if err := e.Client.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctx, n) })
	n.Status.Devices = []tesserav1.GPUDevice{
		{Index: 0, UUID: "GPU-0a1b2c3d-0000-0000-0000-000000000000", Model: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920, Healthy: true},
		{Index: 1, UUID: "GPU-0a1b2c3d-0000-0000-0000-000000000001", Model: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920, Healthy: true},
	}
	n.Status.Links = []tesserav1.GPULink{{A: 0, B: 1, NVLinks: 12, PCIe: tesserav1.PCIeSameCPU}}
	if err := e.Client.Status().Update(ctx, n); err != nil {
		t.Fatalf("status update: %v", err)
	}
	n.Status.Links = []tesserav1.GPULink{{A: 1, B: 0}}
	err := e.Client.Status().Update(ctx, n)
	if err == nil || !strings.Contains(err.Error(), "status.links[0]") || !strings.Contains(err.Error(), "links[].a must be lower") {
		t.Fatalf("reversed link: got %v, want a rejection naming links[].a", err)
	}
}

func TestInvalidObjectsRejected(t *testing.T) {
	e := requireEnv(t)
	cases := []struct {
		name string
		doc  string
		want []string // every substring must appear in the API server's message
	}{
		{"queue weight zero", `
apiVersion: tessera.dev/v1alpha1
kind: Queue
metadata: {name: bad-weight}
spec: {weight: 0}`, []string{"spec.weight", "greater than or equal to 1"}},
		{"queue deserved above capability", `
apiVersion: tessera.dev/v1alpha1
kind: Queue
metadata: {name: bad-deserved}
spec:
  deserved: {tessera.dev/gpu: "16"}
  capability: {tessera.dev/gpu: "8"}`, []string{"spec.deserved", "must not exceed spec.capability"}},
		{"queue guarantee above capability", `
apiVersion: tessera.dev/v1alpha1
kind: Queue
metadata: {name: bad-guarantee}
spec:
  guarantee: {cpu: "2000m", memory: 8Gi}
  capability: {cpu: "1", memory: 16Gi}`, []string{"spec.guarantee", "must not exceed spec.capability"}},
		{"queue is its own parent", `
apiVersion: tessera.dev/v1alpha1
kind: Queue
metadata: {name: loop}
spec: {parent: loop}`, []string{"spec.parent must name another queue"}},
		{"queue parent not a name", `
apiVersion: tessera.dev/v1alpha1
kind: Queue
metadata: {name: bad-parent}
spec: {parent: "Team_A"}`, []string{"spec.parent", "should match"}},
		{"queue weight is a string", `
apiVersion: tessera.dev/v1alpha1
kind: Queue
metadata: {name: bad-type}
spec: {weight: heavy}`, []string{"spec.weight", "integer"}},
		{"podgroup minMember zero", `
apiVersion: tessera.dev/v1alpha1
kind: PodGroup
metadata: {name: bad-min, namespace: default}
spec: {minMember: 0}`, []string{"spec.minMember", "greater than or equal to 1"}},
		{"podgroup empty topology", `
apiVersion: tessera.dev/v1alpha1
kind: PodGroup
metadata: {name: bad-topo, namespace: default}
spec: {minMember: 2, topology: {}}`, []string{"spec.topology", "needs required or preferred"}},
		{"podgroup bad minRuntime", `
apiVersion: tessera.dev/v1alpha1
kind: PodGroup
metadata: {name: bad-runtime, namespace: default}
spec: {minRuntime: "ten minutes"}`, []string{"spec.minRuntime", "should match"}},
		{"podgroup queue not a name", `
apiVersion: tessera.dev/v1alpha1
kind: PodGroup
metadata: {name: bad-queue, namespace: default}
spec: {queue: "Train Prod"}`, []string{"spec.queue", "should match"}},
		{"scaledown threshold above 100", `
apiVersion: tessera.dev/v1alpha1
kind: ScaleDownPolicy
metadata: {name: bad-threshold}
spec: {gpuUtilizationThreshold: 150}`, []string{"spec.gpuUtilizationThreshold", "less than or equal to 100"}},
		{"scaledown maxParallel zero", `
apiVersion: tessera.dev/v1alpha1
kind: ScaleDownPolicy
metadata: {name: bad-parallel}
spec: {maxParallel: 0}`, []string{"spec.maxParallel", "greater than or equal to 1"}},
		{"scaledown negative price", `
apiVersion: tessera.dev/v1alpha1
kind: ScaleDownPolicy
metadata: {name: bad-price}
spec: {pricePerGPUHour: "-2"}`, []string{"spec.pricePerGPUHour", "should match"}},
		{"scaledown bad idleAfter", `
apiVersion: tessera.dev/v1alpha1
kind: ScaleDownPolicy
metadata: {name: bad-idle}
spec: {idleAfter: "30 minutes"}`, []string{"spec.idleAfter", "should match"}},
		{"admission policy unknown enforcement", `
apiVersion: tessera.dev/v1alpha1
kind: AdmissionPolicy
metadata: {name: bad-enforcement}
spec: {rego: "package tessera.x", targets: [Pod], enforcement: block}`, []string{"spec.enforcement", "Unsupported value", "deny"}},
		{"admission policy without targets", `
apiVersion: tessera.dev/v1alpha1
kind: AdmissionPolicy
metadata: {name: bad-targets}
spec: {rego: "package tessera.x", targets: []}`, []string{"spec.targets", "at least 1"}},
		{"admission policy unknown target", `
apiVersion: tessera.dev/v1alpha1
kind: AdmissionPolicy
metadata: {name: bad-target-kind}
spec: {rego: "package tessera.x", targets: [Deployment]}`, []string{"spec.targets[0]", "Unsupported value"}},
		{"admission policy without rego", `
apiVersion: tessera.dev/v1alpha1
kind: AdmissionPolicy
metadata: {name: no-rego}
spec: {targets: [Pod]}`, []string{"spec.rego", "Required value"}},
	}
	ctx := t.Context()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := decode(t, tc.doc)
			err := e.Client.Create(ctx, obj)
			if err == nil {
				_ = e.Client.Delete(ctx, obj)
				t.Fatalf("accepted; want a rejection naming %q", tc.want[0])
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q does not contain %q", err.Error(), w)
				}
			}
		})
	}
}
