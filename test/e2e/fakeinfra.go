package e2e

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The minimal Cluster API infrastructure provider of the test: a FakeMachine (cloned by
// the MachineSet from a FakeMachineTemplate) becomes a kwok Node in the same API
// server, with the FakeMachine's providerID, and a node agent on simulated GPUs is
// started for it; deleting the FakeMachine deletes the Node and stops the agent. The
// management cluster is the workload cluster (self-hosted).
var (
	fakeMachineGVK  = schema.GroupVersionKind{Group: "infrastructure.e2e.tessera.dev", Version: "v1beta1", Kind: "FakeMachine"}
	fakeTemplateGVK = schema.GroupVersionKind{Group: "infrastructure.e2e.tessera.dev", Version: "v1beta1", Kind: "FakeMachineTemplate"}
)

const fakeMachineFinalizer = "infrastructure.e2e.tessera.dev/node"

// fakeInfraCRDs are the provider's CRDs: FakeMachine (with a status subresource) and
// FakeMachineTemplate. The contract label tells Cluster API which version of them
// follows its v1beta2 contract.
var fakeInfraCRDs = fakeCRD("FakeMachine", "subresources: {status: {}}") + "---\n" + fakeCRD("FakeMachineTemplate", "")

func fakeCRD(kind, subresources string) string {
	singular := strings.ToLower(kind)
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]ss.%[3]s
  labels: {cluster.x-k8s.io/v1beta2: v1beta1}
spec:
  group: %[3]s
  names: {kind: %[1]s, listKind: %[1]sList, plural: %[2]ss, singular: %[2]s}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    %[4]s
`, kind, singular, fakeMachineGVK.Group, subresources)
}

// nodeAgents starts and stops the node agent of a fake node.
type nodeAgents interface {
	StartAgent(node string) error
	StopAgent(node string)
}

// fakeInfra reconciles FakeMachines.
type fakeInfra struct {
	client ctrl.Client
	agents nodeAgents
}

func (f *fakeInfra) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(fakeMachineGVK)
	if err := f.client.Get(ctx, req.NamespacedName, m); err != nil {
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	node := m.GetName()
	if !m.GetDeletionTimestamp().IsZero() {
		f.agents.StopAgent(node)
		err := f.client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
		if err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		if controllerutil.RemoveFinalizer(m, fakeMachineFinalizer) {
			return reconcile.Result{}, f.client.Update(ctx, m)
		}
		return reconcile.Result{}, nil
	}
	if controllerutil.AddFinalizer(m, fakeMachineFinalizer) {
		if err := f.client.Update(ctx, m); err != nil {
			return reconcile.Result{}, err
		}
	}
	providerID := "fake://" + m.GetNamespace() + "/" + node
	if err := f.ensureNode(ctx, node, providerID); err != nil {
		return reconcile.Result{}, err
	}
	if err := f.agents.StartAgent(node); err != nil {
		return reconcile.Result{}, err
	}
	if id, _, _ := unstructured.NestedString(m.Object, "spec", "providerID"); id != providerID {
		if err := unstructured.SetNestedField(m.Object, providerID, "spec", "providerID"); err != nil {
			return reconcile.Result{}, err
		}
		if err := f.client.Update(ctx, m); err != nil {
			return reconcile.Result{}, err
		}
	}
	if ok, _, _ := unstructured.NestedBool(m.Object, "status", "initialization", "provisioned"); !ok {
		_ = unstructured.SetNestedField(m.Object, true, "status", "initialization", "provisioned")
		_ = unstructured.SetNestedField(m.Object, true, "status", "ready")
		if err := f.client.Status().Update(ctx, m); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// ensureNode creates the kwok Node of a machine: kwok keeps it Ready and runs its pods.
// The API server's admission taints a new Node not-ready; kube-controller-manager's node
// lifecycle controller lifts the taint once kwok reports the Node Ready.
func (f *fakeInfra) ensureNode(ctx context.Context, name, providerID string) error {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"type": "kwok", corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
		Spec: corev1.NodeSpec{ProviderID: providerID},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("128"),
				corev1.ResourceMemory: resource.MustParse("1Ti"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
		},
	}
	n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	err := f.client.Create(ctx, n)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	return nil
}
