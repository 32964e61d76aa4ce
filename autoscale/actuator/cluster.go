package actuator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tessera-gpu/tessera/autoscale"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/cache"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
)

// ReadCluster builds what a planning round for pol reads from the cluster: the
// scheduler's snapshot (scheduler/cache) and, per node, whether its GPUs are reported,
// their last activity, the first rule that keeps it and whether it is being scaled
// down. A node first seen by a planner counts as idle from its GPUNode's
// lastActiveTime (or the node's creation). Node groups are left empty: an
// Infrastructure fills them in (FillGroups).
func ReadCluster(ctx context.Context, r client.Reader, pol *tesserav1.ScaleDownPolicy, opts snapshot.Options, now time.Time) (*autoscale.Cluster, error) {
	c, _, err := readCluster(ctx, r, pol, opts, now)
	return c, err
}

// readCluster is ReadCluster, also returning the objects it read.
func readCluster(ctx context.Context, r client.Reader, pol *tesserav1.ScaleDownPolicy, opts snapshot.Options, now time.Time) (*autoscale.Cluster, *cache.State, error) {
	snap, state, _, err := cache.New(r, opts).Snapshot(ctx, now)
	if err != nil {
		return nil, nil, err
	}
	var pdbs policyv1.PodDisruptionBudgetList
	if err := r.List(ctx, &pdbs); err != nil {
		return nil, nil, fmt.Errorf("list PodDisruptionBudgets: %w", err)
	}
	budgets := make([]*policyv1.PodDisruptionBudget, len(pdbs.Items))
	for i := range pdbs.Items {
		budgets[i] = &pdbs.Items[i]
	}
	byNode := map[string][]*corev1.Pod{}
	for _, p := range state.Pods {
		if p.Spec.NodeName != "" {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	c := &autoscale.Cluster{Snap: snap, Nodes: map[string]autoscale.NodeState{}}
	c.LastScaleUp = lastJoined(state.Nodes, pol, now)
	for name, node := range state.Nodes {
		pods := byNode[name]
		slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
		st := autoscale.NodeState{Blocker: autoscale.NodeBlocker(node, pods, budgets), Ignored: map[string]bool{}, CountFrom: node.CreationTimestamp.Time}
		if g := state.GPUNodes[name]; g != nil {
			st.GPUsReady = true
			if g.Status.LastActiveTime != nil {
				st.LastActive = g.Status.LastActiveTime.Time
				st.CountFrom = st.LastActive
			}
		}
		if sd, err := autoscale.StateOf(node); err == nil && sd != nil {
			st.Removed = sd.Phase == autoscale.PhaseRemoved
			st.InProgress = !st.Removed
		} else {
			st.InProgress = autoscale.Tainted(node)
		}
		for _, p := range pods {
			if !autoscale.Evicted(p) || p.DeletionTimestamp != nil {
				st.Ignored[string(p.UID)] = true
			}
		}
		c.Nodes[name] = st
	}
	return c, state, nil
}

// lastJoined is when the newest node pol covers joined the cluster; a node created
// after now (a clock that runs behind the API server's) does not count.
func lastJoined(nodes map[string]*corev1.Node, pol *tesserav1.ScaleDownPolicy, now time.Time) time.Time {
	sel := labels.Everything()
	if p, err := autoscale.PolicyFrom(pol); err == nil {
		sel = p.Selector
	}
	var last time.Time
	for _, n := range nodes {
		if at := n.CreationTimestamp.Time; at.After(last) && !at.After(now) && sel.Matches(labels.Set(n.Labels)) {
			last = at
		}
	}
	return last
}

// PlanCluster plans once for every ScaleDownPolicy of the cluster, changing nothing.
// infra, when not nil, reports the node groups and their floors.
func PlanCluster(ctx context.Context, r client.Reader, infra Infrastructure, cfg scheduler.Config, now time.Time) ([]*autoscale.Plan, error) {
	var pols tesserav1.ScaleDownPolicyList
	if err := r.List(ctx, &pols); err != nil {
		return nil, fmt.Errorf("list ScaleDownPolicies: %w", err)
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	nodeList := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		nodeList[i] = &nodes.Items[i]
	}
	var dra bool
	if m, ok := r.(interface{ RESTMapper() meta.RESTMapper }); ok { // a client.Client
		dra = cache.ServesDRA(m.RESTMapper())
	}
	var out []*autoscale.Plan
	for i := range pols.Items {
		pol, err := autoscale.PolicyFrom(&pols.Items[i])
		if err != nil {
			return nil, err
		}
		sched, err := scheduler.New(cfg)
		if err != nil {
			return nil, err
		}
		c, err := ReadCluster(ctx, r, &pols.Items[i], snapshot.Options{WholeGPUs: cfg.WholeGPUs, DRA: dra}, now)
		if err != nil {
			return nil, err
		}
		if err := FillGroups(ctx, c, infra, nodeList); err != nil {
			return nil, fmt.Errorf("node groups: %w", err)
		}
		out = append(out, autoscale.NewPlanner(pol, sched).Plan(c))
	}
	return out, nil
}
