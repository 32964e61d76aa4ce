package capi

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/internal/apitest"
)

func controlledBy(kind, name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: kind, Name: name, Controller: ptr.To(true)}}
}

// Nodes find their Machine by annotation, nodeRef or providerID; the group is the
// MachineDeployment above the MachineSet, else the MachineSet; a Machine of no
// MachineSet may not go; a bad min-size annotation is an error naming it.
func TestNodeGroups(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	md := &clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "md", Annotations: map[string]string{clusterv1.AutoscalerMinSizeAnnotation: "1"}},
		Spec: clusterv1.MachineDeploymentSpec{Replicas: ptr.To(int32(3))}}
	objs := []client.Object{md,
		&clusterv1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ms", OwnerReferences: controlledBy("MachineDeployment", "md")}},
		&clusterv1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "solo"}, Spec: clusterv1.MachineSetSpec{Replicas: ptr.To(int32(2))}},
		&clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m-a", OwnerReferences: controlledBy("MachineSet", "ms")}},
		&clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m-b", OwnerReferences: controlledBy("MachineSet", "solo")},
			Status: clusterv1.MachineStatus{NodeRef: clusterv1.MachineNodeReference{Name: "b"}}},
		&clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m-c"}, Spec: clusterv1.MachineSpec{ProviderID: "fake://c"}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	nodes := []*corev1.Node{
		apitest.MakeNode("a").Annotation(clusterv1.MachineAnnotation, "m-a").Annotation(clusterv1.ClusterNamespaceAnnotation, "ns").Obj(),
		apitest.MakeNode("b").Obj(), apitest.MakeNode("c").ProviderID("fake://c").Obj(), apitest.MakeNode("d").Obj(),
	}
	byNode, groups, err := New(c).NodeGroups(context.Background(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "MachineDeployment ns/md", "b": "MachineSet ns/solo", "c": "Machine ns/m-c"}
	if len(byNode) != len(want) {
		t.Fatalf("groups by node %v", byNode)
	}
	for n, g := range want {
		if byNode[n] != g {
			t.Errorf("node %s in %q, want %q", n, byNode[n], g)
		}
	}
	for g, size := range map[string]autoscale.Group{"MachineDeployment ns/md": {Replicas: 3, MinSize: 1}, "MachineSet ns/solo": {Replicas: 2}, "Machine ns/m-c": {Replicas: 1, MinSize: 1}} {
		if groups[g] != size {
			t.Errorf("%s: %+v, want %+v", g, groups[g], size)
		}
	}
	md.Annotations[clusterv1.AutoscalerMinSizeAnnotation] = "two"
	if err := c.Update(context.Background(), md); err != nil {
		t.Fatal(err)
	}
	if _, _, err := New(c).NodeGroups(context.Background(), nodes); err == nil || !strings.Contains(err.Error(), `MachineDeployment ns/md: annotation cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size "two" must be a non-negative integer`) {
		t.Fatalf("bad min size: %v", err)
	}
}
