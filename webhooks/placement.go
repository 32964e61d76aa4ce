package webhooks

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
)

// GPUTaints are the taint keys that keep pods without GPUs off GPU nodes, as the
// policies' lib.gpu_taints: the NVIDIA device plugin's and Tessera's.
var GPUTaints = []string{"nvidia.com/gpu", "tessera.dev/gpu"}

// PlacementFields are the parts of a pod's spec that decide where it may run and that a
// pod UPDATE may change: tolerations may be added to any pod, nodeSelector and affinity
// changed while the pod has schedulingGates, and the gates removed.
var PlacementFields = []string{"tolerations", "nodeSelector", "affinity", "schedulingGates"}

// PlacementGuard checks a pod UPDATE that changes one of PlacementFields by the rules
// the scheduler policy applies when the pod is created: a pod that asks for no GPU may
// not gain a toleration of the GPU nodes' taint (GPUTaints) or of every taint, nor be
// pointed at a GPU node by name (a nodeSelector or a required node affinity naming one:
// kubernetes.io/hostname, or the node's metadata.name). A GPU pod may not gain a
// toleration of every taint: it would keep a running pod on nodes tainted NoExecute and
// let a pending one onto nodes its admission kept it off. Without it, a pending pod
// created with a nodeSelector for a GPU node could be patched to tolerate every taint
// and kube-scheduler would bind it there. Tolerations a pod already had were checked
// when it was created. The scheduler's identity and kubelets are exempt, as from the
// policy; updates that leave PlacementFields alone are not looked at.
type PlacementGuard struct {
	// Users are the scheduler's user names (SchedulerUser).
	Users []string
	// Cluster knows the GPU nodes; nil: none known.
	Cluster ClusterSource
}

var _ Guard = (*PlacementGuard)(nil)

// Check implements Guard.
func (g *PlacementGuard) Check(req *admissionv1.AdmissionRequest) string {
	if req.Kind.Kind != KindPod || req.Operation != admissionv1.Update || req.SubResource != "" {
		return ""
	}
	var now, before corev1.Pod
	if err := decodeObject(req.Object.Raw, &now); err != nil {
		return fmt.Sprintf("cannot read the Pod: %v", err)
	}
	if err := decodeObject(req.OldObject.Raw, &before); err != nil {
		return fmt.Sprintf("cannot read the Pod as it was: %v", err)
	}
	changed := placementChanges(&now.Spec, &before.Spec)
	if len(changed) == 0 {
		return ""
	}
	if u := req.UserInfo; slices.Contains(g.Users, u.Username) || slices.Contains(u.Groups, "system:nodes") {
		return ""
	}
	gpu := asksGPU(&now)
	var out []string
	for i, t := range now.Spec.Tolerations {
		if slices.ContainsFunc(before.Spec.Tolerations, func(o corev1.Toleration) bool { return reflect.DeepEqual(o, t) }) {
			continue
		}
		switch {
		case !gpu && toleratesGPUTaint(t):
			out = append(out, fmt.Sprintf("spec.tolerations[%d] %s: a workload that requests no GPU may not run on GPU nodes; remove the toleration, or request the GPUs it needs",
				i, toleratedText(t)))
		case gpu && toleratesEveryTaint(t):
			out = append(out, fmt.Sprintf("spec.tolerations[%d] tolerates every taint: it may not be added to a pod after the pod is created, as it would keep the pod on nodes tainted NoExecute and let it onto nodes its admission kept it off; remove it from the update (or delete the pod and create it again with the tolerations it needs)",
				i))
		}
	}
	if !gpu && (slices.Contains(changed, "nodeSelector") || slices.Contains(changed, "affinity")) {
		nodes, err := g.gpuNodes(context.Background())
		if err != nil {
			return fmt.Sprintf("cannot read the cluster's GPU nodes: %v", err)
		}
		for _, s := range gpuNodeSelections(&now.Spec, nodes) {
			out = append(out, s+": a workload that requests no GPU may not be placed on one; select nodes without GPUs, or request the GPUs it needs")
		}
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "; ") + fmt.Sprintf(" (pod update changing %s)", strings.Join(changed, ", "))
}

func (g *PlacementGuard) gpuNodes(ctx context.Context) (map[string]bool, error) {
	if g.Cluster == nil {
		return nil, nil
	}
	c, err := g.Cluster.Cluster(ctx)
	if err != nil {
		return nil, err
	}
	return c.GPUNodes, nil
}

// placementChanges lists the PlacementFields that differ between now and before (an
// empty list or map is read as none).
func placementChanges(now, before *corev1.PodSpec) []string {
	var out []string
	differs := func(a, b any, empty bool) bool { return !empty && !reflect.DeepEqual(a, b) }
	if differs(now.Tolerations, before.Tolerations, len(now.Tolerations) == 0 && len(before.Tolerations) == 0) {
		out = append(out, "tolerations")
	}
	if differs(now.NodeSelector, before.NodeSelector, len(now.NodeSelector) == 0 && len(before.NodeSelector) == 0) {
		out = append(out, "nodeSelector")
	}
	if differs(now.Affinity, before.Affinity, now.Affinity == nil && before.Affinity == nil) {
		out = append(out, "affinity")
	}
	if differs(now.SchedulingGates, before.SchedulingGates, len(now.SchedulingGates) == 0 && len(before.SchedulingGates) == 0) {
		out = append(out, "schedulingGates")
	}
	return out
}

// toleratesGPUTaint: as lib.tolerates_gpu_taint.
func toleratesGPUTaint(t corev1.Toleration) bool {
	return slices.Contains(GPUTaints, t.Key) || toleratesEveryTaint(t)
}

func toleratesEveryTaint(t corev1.Toleration) bool {
	return t.Key == "" && t.Operator == corev1.TolerationOpExists
}

// toleratedText: as the scheduler policy's tolerated.
func toleratedText(t corev1.Toleration) string {
	if t.Key != "" {
		return "tolerates the GPU nodes' taint " + t.Key
	}
	return fmt.Sprintf("tolerates every taint, the GPU nodes' among them (%s)", strings.Join(GPUTaints, ", "))
}

// gpuNodeSelections lists where spec names a GPU node of nodes as the one to run on: its
// nodeSelector's kubernetes.io/hostname, and the required node affinity's terms that
// select kubernetes.io/hostname or metadata.name In a list with a GPU node.
func gpuNodeSelections(spec *corev1.PodSpec, nodes map[string]bool) []string {
	var out []string
	if n := spec.NodeSelector[corev1.LabelHostname]; nodes[n] {
		out = append(out, fmt.Sprintf("spec.nodeSelector[%s] %q is a GPU node", corev1.LabelHostname, n))
	}
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil || spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return out
	}
	for i, term := range spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		where := fmt.Sprintf("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[%d]", i)
		for _, list := range []struct {
			field, key string
			reqs       []corev1.NodeSelectorRequirement
		}{{"matchExpressions", corev1.LabelHostname, term.MatchExpressions}, {"matchFields", "metadata.name", term.MatchFields}} {
			for j, r := range list.reqs {
				if r.Key != list.key || r.Operator != corev1.NodeSelectorOpIn {
					continue
				}
				for _, v := range r.Values {
					if nodes[v] {
						out = append(out, fmt.Sprintf("%s.%s[%d] selects %q, a GPU node", where, list.field, j, v))
						break
					}
				}
			}
		}
	}
	return out
}
