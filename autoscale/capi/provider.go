package capi

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/tessera-gpu/tessera/autoscale/actuator"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/tessera-gpu/tessera/autoscale"
)

// AnnotationReplicasBefore on a Machine marks it as one Tessera is removing, and holds
// its node group's replicas when it was marked (for people reading it). Lower counts the
// marked Machines of a group to lower it exactly once per Machine.
const AnnotationReplicasBefore = "tessera.dev/scale-down-replicas-before"

// Provider finds and removes the Machines behind workload-cluster nodes, in the
// management cluster its client talks to (which may be the workload cluster itself).
type Provider struct {
	c client.Client
}

var _ actuator.Infrastructure = (*Provider)(nil)

// New returns a provider writing through c, a client of the management cluster whose
// scheme knows Cluster API's core types (AddToScheme).
func New(c client.Client) *Provider { return &Provider{c: c} }

// AddToScheme adds Cluster API's core v1beta2 types to s.
func AddToScheme(s *runtime.Scheme) error { return clusterv1.AddToScheme(s) }

// Installed reports whether the cluster behind mapper serves Cluster API's Machines
// (cluster.x-k8s.io/v1beta2).
func Installed(mapper meta.RESTMapper) (bool, error) {
	_, err := mapper.RESTMapping(clusterv1.GroupVersion.WithKind("Machine").GroupKind(), clusterv1.GroupVersion.Version)
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	return err == nil, err
}

// NodeGroups implements actuator.Infrastructure: each node with a Machine belongs to
// the Machine's group; a Machine outside any MachineSet (a control-plane Machine) forms
// a group of its own that may not shrink.
func (p *Provider) NodeGroups(ctx context.Context, nodes []*corev1.Node) (map[string]string, map[string]autoscale.Group, error) {
	idx, err := p.index(ctx)
	if err != nil {
		return nil, nil, err
	}
	byNode, groups := map[string]string{}, map[string]autoscale.Group{}
	for _, n := range nodes {
		m := idx.machineOf(n)
		if m == nil {
			continue
		}
		g, err := idx.groupOf(m)
		if err != nil {
			return nil, nil, err
		}
		byNode[n.Name] = g.name
		groups[g.name] = g.Group
	}
	return byNode, groups, nil
}

// Mark implements actuator.Infrastructure.
func (p *Provider) Mark(ctx context.Context, node *corev1.Node, now time.Time) (string, error) {
	m, g, err := p.find(ctx, node)
	if err != nil || m == nil {
		return "", err
	}
	if _, ok := m.Annotations[AnnotationReplicasBefore]; ok {
		return key(m), nil
	}
	if g.scalable == nil {
		return "", fmt.Errorf("the Machine %s belongs to no MachineSet: Tessera removes only Machines of MachineSets and MachineDeployments", key(m))
	}
	sc, err := p.scale(ctx, g)
	if err != nil {
		return "", err
	}
	next := m.DeepCopy()
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[clusterv1.DeleteMachineAnnotation] = now.UTC().Format(time.RFC3339)
	next.Annotations[AnnotationReplicasBefore] = strconv.Itoa(int(sc.Spec.Replicas))
	if err := p.c.Patch(ctx, next, client.MergeFromWithOptions(m, client.MergeFromWithOptimisticLock{})); err != nil {
		return "", fmt.Errorf("annotate Machine %s %s: %w", key(m), clusterv1.DeleteMachineAnnotation, err)
	}
	return key(m), nil
}

// Lower implements actuator.Infrastructure. It lowers the node's group by as many
// replicas as the group holds Machines that Mark marked and that no decrement covers
// yet, so that every marked Machine costs exactly one replica: when several nodes of one
// group go at once (the MachineSet may delete any marked Machine for a decrement, so
// one Lower covers every mark it sees), and when Lower runs again after a crash between
// its scale update and the MachineSet's deletion. The MachineSet deletes marked
// Machines first, any of them for a decrement: so the group is lowered only once every
// mark in it was made by settledBy, when the MachineSet has seen them all (a mark it
// has not seen yet would have it delete another Machine in its place); until then Lower
// returns actuator.Wait. It never lowers a group below its min-size annotation, and updates
// the scale with its resourceVersion, so a concurrent change of the replicas fails it
// rather than being overwritten.
func (p *Provider) Lower(ctx context.Context, node *corev1.Node, settledBy time.Time) (string, error) {
	idx, err := p.index(ctx)
	if err != nil {
		return "", err
	}
	m := idx.machineOf(node)
	if m == nil {
		return "", fmt.Errorf("node %s has no Machine any more", node.Name)
	}
	if _, ok := m.Annotations[AnnotationReplicasBefore]; !ok {
		return "", fmt.Errorf("the Machine %s has no annotation %s; mark it first", key(m), AnnotationReplicasBefore)
	}
	g, err := idx.groupOf(m)
	if err != nil {
		return "", err
	}
	if g.scalable == nil {
		return "", fmt.Errorf("the Machine %s belongs to no MachineSet", key(m))
	}
	sc, err := p.scale(ctx, g)
	if err != nil {
		return "", err
	}
	now := int(sc.Spec.Replicas)
	present, marked, youngest := idx.members(g)
	if youngest.After(settledBy) {
		return "", actuator.Wait(fmt.Sprintf("a Machine of %s was marked for deletion at %s; the group is lowered once every mark in it has settled", g.name, youngest.Format(time.RFC3339)))
	}
	// present-now Machines are about to go because the replicas are below them: marked
	// ones first, so those many marks are covered already.
	uncovered := marked - max(0, present-now)
	if uncovered <= 0 {
		return fmt.Sprintf("%s lowered already (%d replicas, %d Machines, %d marked)", g.name, now, present, marked), nil
	}
	if now-uncovered < g.MinSize {
		return "", fmt.Errorf("%s at %d replicas may not go %d lower, below its %s %d", g.name, now, uncovered, clusterv1.AutoscalerMinSizeAnnotation, g.MinSize)
	}
	sc.Spec.Replicas = int32(now - uncovered)
	if err := p.c.SubResource("scale").Update(ctx, g.scalable, client.WithSubResourceBody(sc)); err != nil {
		return "", fmt.Errorf("scale %s to %d: %w", g.name, now-uncovered, err)
	}
	return fmt.Sprintf("%s %d -> %d", g.name, now, now-uncovered), nil
}

// Unmark implements actuator.Infrastructure: it takes off the annotations Mark set,
// and only those (a delete-machine annotation someone else set stays).
func (p *Provider) Unmark(ctx context.Context, node *corev1.Node) error {
	m, err := p.machine(ctx, node)
	if err != nil || m == nil {
		return err
	}
	if _, ok := m.Annotations[AnnotationReplicasBefore]; !ok {
		return nil
	}
	next := m.DeepCopy()
	delete(next.Annotations, AnnotationReplicasBefore)
	delete(next.Annotations, clusterv1.DeleteMachineAnnotation)
	if err := p.c.Patch(ctx, next, client.MergeFromWithOptions(m, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("remove the annotations of Machine %s: %w", key(m), err)
	}
	return nil
}

// find returns node's Machine (nil: none) and its group.
func (p *Provider) find(ctx context.Context, node *corev1.Node) (*clusterv1.Machine, group, error) {
	idx, err := p.index(ctx)
	if err != nil {
		return nil, group{}, err
	}
	m := idx.machineOf(node)
	if m == nil {
		return nil, group{}, nil
	}
	g, err := idx.groupOf(m)
	return m, g, err
}

// machine returns node's Machine, nil when it has none.
func (p *Provider) machine(ctx context.Context, node *corev1.Node) (*clusterv1.Machine, error) {
	idx, err := p.index(ctx)
	if err != nil {
		return nil, err
	}
	return idx.machineOf(node), nil
}

// scale reads the group's scale subresource.
func (p *Provider) scale(ctx context.Context, g group) (*autoscalingv1.Scale, error) {
	sc := &autoscalingv1.Scale{}
	if err := p.c.SubResource("scale").Get(ctx, g.scalable, sc); err != nil {
		return nil, fmt.Errorf("read the scale of %s: %w", g.name, err)
	}
	return sc, nil
}

func key(o metav1.Object) string { return o.GetNamespace() + "/" + o.GetName() }
