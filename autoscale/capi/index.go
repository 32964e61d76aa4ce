package capi

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/tessera-gpu/tessera/autoscale"
)

// index is the management cluster's Machines, MachineSets and MachineDeployments.
type index struct {
	byKey, byProvider map[string]*clusterv1.Machine
	// byNode holds the Machines by status.nodeRef; one management cluster may run
	// several workload clusters whose nodes share names.
	byNode      map[string][]*clusterv1.Machine
	sets        map[string]*clusterv1.MachineSet
	deployments map[string]*clusterv1.MachineDeployment
}

// group is a node group: the object to scale (nil for a Machine of no MachineSet),
// its name for messages and its size.
type group struct {
	autoscale.Group
	name     string
	scalable client.Object
}

func (p *Provider) index(ctx context.Context) (*index, error) {
	var ms clusterv1.MachineList
	var sets clusterv1.MachineSetList
	var mds clusterv1.MachineDeploymentList
	for _, l := range []client.ObjectList{&ms, &sets, &mds} {
		if err := p.c.List(ctx, l); err != nil {
			return nil, fmt.Errorf("list %T in the management cluster: %w", l, err)
		}
	}
	idx := &index{byKey: map[string]*clusterv1.Machine{}, byNode: map[string][]*clusterv1.Machine{}, byProvider: map[string]*clusterv1.Machine{},
		sets: map[string]*clusterv1.MachineSet{}, deployments: map[string]*clusterv1.MachineDeployment{}}
	for i := range ms.Items {
		m := &ms.Items[i]
		idx.byKey[key(m)] = m
		if m.Status.NodeRef.Name != "" {
			idx.byNode[m.Status.NodeRef.Name] = append(idx.byNode[m.Status.NodeRef.Name], m)
		}
		if m.Spec.ProviderID != "" {
			idx.byProvider[m.Spec.ProviderID] = m
		}
	}
	for i := range sets.Items {
		idx.sets[key(&sets.Items[i])] = &sets.Items[i]
	}
	for i := range mds.Items {
		idx.deployments[key(&mds.Items[i])] = &mds.Items[i]
	}
	return idx, nil
}

// machineOf finds node's Machine: by the node's annotations, else by status.nodeRef
// (of the node's cluster, by its cluster.x-k8s.io/cluster-name annotation, when several
// clusters have a node of that name), else by spec.providerID; nil when none.
func (idx *index) machineOf(node *corev1.Node) *clusterv1.Machine {
	if name := node.Annotations[clusterv1.MachineAnnotation]; name != "" {
		if m := idx.byKey[node.Annotations[clusterv1.ClusterNamespaceAnnotation]+"/"+name]; m != nil {
			return m
		}
	}
	var found []*clusterv1.Machine
	for _, m := range idx.byNode[node.Name] {
		if cluster, ok := node.Annotations[clusterv1.ClusterNameAnnotation]; !ok || m.Spec.ClusterName == cluster {
			found = append(found, m)
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	if node.Spec.ProviderID != "" {
		return idx.byProvider[node.Spec.ProviderID]
	}
	return nil
}

// groupOf is m's node group: the MachineDeployment owning its MachineSet, else the
// MachineSet, else m alone (a group that may not shrink).
func (idx *index) groupOf(m *clusterv1.Machine) (group, error) {
	ms := idx.sets[owner(m, "MachineSet")]
	if ms == nil {
		return group{Group: autoscale.Group{Replicas: 1, MinSize: 1}, name: "Machine " + key(m)}, nil
	}
	var obj client.Object = ms
	name, replicas := "MachineSet "+key(ms), ms.Spec.Replicas
	if md := idx.deployments[owner(ms, "MachineDeployment")]; md != nil {
		obj, name, replicas = md, "MachineDeployment "+key(md), md.Spec.Replicas
	}
	g := group{name: name, scalable: obj}
	if replicas != nil {
		g.Replicas = int(*replicas)
	}
	if v, ok := obj.GetAnnotations()[clusterv1.AutoscalerMinSizeAnnotation]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return g, fmt.Errorf("%s: annotation %s %q must be a non-negative integer; fix or remove it", name, clusterv1.AutoscalerMinSizeAnnotation, v)
		}
		g.MinSize = n
	}
	return g, nil
}

// members counts the Machines of group g that are not being deleted, and how many of
// them Mark marked; youngest is the latest time of those marks that parses.
func (idx *index) members(g group) (present, marked int, youngest time.Time) {
	for _, m := range idx.byKey {
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		if mg, err := idx.groupOf(m); err != nil || mg.scalable != g.scalable {
			continue
		}
		present++
		if _, ok := m.Annotations[AnnotationReplicasBefore]; ok {
			marked++
			if at, err := time.Parse(time.RFC3339, m.Annotations[clusterv1.DeleteMachineAnnotation]); err == nil && at.After(youngest) {
				youngest = at
			}
		}
	}
	return present, marked, youngest
}

// owner is the namespace/name of o's controller of the given Cluster API kind, "" if none.
func owner(o metav1.Object, kind string) string {
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != kind || !strings.HasPrefix(ref.APIVersion, clusterv1.GroupVersion.Group+"/") {
		return ""
	}
	return o.GetNamespace() + "/" + ref.Name
}
