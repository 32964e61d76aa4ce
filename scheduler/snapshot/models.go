package snapshot

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// modelLabels are the node labels that name a node's GPU model.
var modelLabels = []string{tesserav1.LabelGPUModel, gfdProductLabel}

// gpuModels finds the GPU models that tasks' node selectors and required node
// affinities leave them, judging only their terms on modelLabels, so that a pod pinned
// to GPU models by labels counts as a model-constrained shape of the workload.
type gpuModels struct {
	// nodes has one node per distinct GPU model and modelLabels values, carrying only
	// those labels; models is the model of each.
	nodes  []*corev1.Node
	models []string
	all    int
	memo   map[string][]string
}

func newGPUModels(nodes []*framework.Node) *gpuModels {
	g := &gpuModels{memo: map[string][]string{}}
	seen := map[[3]string]bool{}
	for _, n := range nodes {
		k := [3]string{n.GPUModel, n.Labels[modelLabels[0]], n.Labels[modelLabels[1]]}
		if n.GPUModel == "" || seen[k] {
			continue
		}
		seen[k] = true
		labels := map[string]string{}
		for _, l := range modelLabels {
			if v, ok := n.Labels[l]; ok {
				labels[l] = v
			}
		}
		g.nodes = append(g.nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}})
		g.models = append(g.models, n.GPUModel)
	}
	g.all = len(slices.Compact(slices.Sorted(slices.Values(g.models))))
	return g
}

// of returns the sorted GPU models t may use; nil when its constraints name no model
// label, leave every model or leave none.
func (g *gpuModels) of(t *framework.Task) []string {
	if !t.GPU.Any() || !t.HasNodeConstraints() {
		return nil
	}
	spec := corev1.PodSpec{NodeSelector: map[string]string{}}
	for _, l := range modelLabels {
		if v, ok := t.NodeSelector[l]; ok {
			spec.NodeSelector[l] = v
		}
	}
	if a := t.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		var terms []corev1.NodeSelectorTerm
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			var exprs []corev1.NodeSelectorRequirement
			for _, e := range term.MatchExpressions {
				if slices.Contains(modelLabels, e.Key) {
					exprs = append(exprs, e)
				}
			}
			if len(exprs) == 0 {
				terms = nil // a term that names no model label admits every model
				break
			}
			terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: exprs})
		}
		if terms != nil {
			spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
		}
	}
	if len(spec.NodeSelector) == 0 && spec.Affinity == nil {
		return nil
	}
	key := fmt.Sprint(spec.NodeSelector, spec.Affinity)
	if ms, ok := g.memo[key]; ok {
		return ms
	}
	req := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: spec})
	allowed := map[string]bool{}
	for i, n := range g.nodes {
		if ok, _ := req.Match(n); ok {
			allowed[g.models[i]] = true
		}
	}
	var ms []string
	if len(allowed) > 0 && len(allowed) < g.all {
		ms = slices.Sorted(maps.Keys(allowed))
	}
	g.memo[key] = ms
	return ms
}
