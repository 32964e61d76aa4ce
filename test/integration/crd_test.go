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
	"github.com/tessera-gpu/tessera/deploy/crds/crdstest"
	"github.com/tessera-gpu/tessera/internal/apitest"
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
  namespaceSelector:
    matchLabels: {team: prod}
    matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [scratch]}, {key: tier, operator: Exists}]
  allowedPriorityClasses: [production-high, batch-normal]
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
	n := apitest.MakeGPUNode("status-node").Obj()
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
	cases := crdstest.InvalidObjects(t) // also rejected offline: deploy/crds
	ctx := t.Context()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			obj := decode(t, string(tc.Doc))
			err := e.Client.Create(ctx, obj)
			if err == nil {
				_ = e.Client.Delete(ctx, obj)
				t.Fatalf("accepted; want a rejection naming %q", tc.Want[0])
			}
			for _, w := range tc.Want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q does not contain %q", err.Error(), w)
				}
			}
		})
	}
}
