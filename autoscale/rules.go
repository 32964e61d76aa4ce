package autoscale

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Annotations of other autoscalers that Tessera honours.
const (
	// AnnotationScaleDownDisabled on a node keeps it ("true").
	AnnotationScaleDownDisabled = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
	// AnnotationSafeToEvict on a pod: "false" keeps its node, "true" lets it go even
	// without a controller or with local storage, "on-completion" waits for it to finish.
	AnnotationSafeToEvict = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	// AnnotationDoNotDisrupt on a node or pod keeps the node ("true").
	AnnotationDoNotDisrupt = "karpenter.sh/do-not-disrupt"
	// SafeToEvictOnCompletion is the safe-to-evict value that waits for the pod to end.
	SafeToEvictOnCompletion = "on-completion"
)

// Unremovable reasons, the label values of tessera_autoscale_unremovable_nodes.
const (
	ReasonScaleDownDisabled = "ScaleDownDisabled"
	ReasonDoNotDisrupt      = "DoNotDisrupt"
	ReasonNotSafeToEvict    = "NotSafeToEvict"
	ReasonRunningToEnd      = "WaitingForCompletion"
	ReasonPDB               = "PodDisruptionBudget"
	ReasonNoController      = "NoController"
	ReasonLocalStorage      = "LocalStorage"
	ReasonKubeSystem        = "KubeSystemWithoutPDB"
	ReasonNotReady          = "GPUsNotReady"
	ReasonNotIdle           = "NotIdle"
	ReasonCheckpoint        = "WaitingForCheckpoint"
	ReasonBusyGPUs          = "GPUsBusy"
	ReasonMinNodes          = "MinNodes"
	ReasonMinSize           = "NodeGroupMinSize"
	ReasonMaxParallel       = "MaxParallel"
	ReasonCooldown          = "Cooldown"
	ReasonNoPlace           = "PodsDoNotFitElsewhere"
	ReasonNeededByGang      = "NeededByPendingGang"
	ReasonDeserved          = "QueueDeservedShare"
	ReasonInProgress        = "ScaleDownInProgress"
	ReasonRemoved           = "ScaledDown"
)

// Blocker is why a node must stay: a reason code and a sentence naming the object.
type Blocker struct {
	Reason  string
	Message string
}

// NodeBlocker returns the first rule that keeps node with the given pods bound to it,
// or nil. pdbs are every PodDisruptionBudget of the cluster; DaemonSet and mirror pods
// and pods that ended are not evicted and never keep a node.
func NodeBlocker(node *corev1.Node, pods []*corev1.Pod, pdbs []*policyv1.PodDisruptionBudget) *Blocker {
	if node.Annotations[AnnotationScaleDownDisabled] == "true" {
		return &Blocker{ReasonScaleDownDisabled, fmt.Sprintf("node %s is annotated %s=true", node.Name, AnnotationScaleDownDisabled)}
	}
	if node.Annotations[AnnotationDoNotDisrupt] == "true" {
		return &Blocker{ReasonDoNotDisrupt, fmt.Sprintf("node %s is annotated %s=true", node.Name, AnnotationDoNotDisrupt)}
	}
	// budget counts, per PDB, the disruptions the drain would cause.
	budget := map[*policyv1.PodDisruptionBudget]int32{}
	for _, p := range pods {
		if !Evicted(p) {
			continue
		}
		if b := podBlocker(p, pdbs, budget); b != nil {
			return b
		}
	}
	return nil
}

// Evicted reports whether draining a node evicts p: not for pods that ended, DaemonSet
// pods (the DaemonSet tolerates the drain) and mirror pods of static manifests.
func Evicted(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	c := metav1.GetControllerOf(p)
	return c == nil || c.Kind != "DaemonSet"
}

func podBlocker(p *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget, budget map[*policyv1.PodDisruptionBudget]int32) *Blocker {
	name := p.Namespace + "/" + p.Name
	if p.Annotations[AnnotationDoNotDisrupt] == "true" {
		return &Blocker{ReasonDoNotDisrupt, fmt.Sprintf("pod %s is annotated %s=true", name, AnnotationDoNotDisrupt)}
	}
	safe := p.Annotations[AnnotationSafeToEvict]
	switch safe {
	case "false":
		return &Blocker{ReasonNotSafeToEvict, fmt.Sprintf("pod %s is annotated %s=false", name, AnnotationSafeToEvict)}
	case SafeToEvictOnCompletion:
		return &Blocker{ReasonRunningToEnd, fmt.Sprintf("pod %s is annotated %s=%s: waiting for it to finish", name, AnnotationSafeToEvict, SafeToEvictOnCompletion)}
	}
	var covering []*policyv1.PodDisruptionBudget
	for _, pdb := range pdbs {
		if pdb.Namespace != p.Namespace || pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		covering = append(covering, pdb)
		budget[pdb]++
		if budget[pdb] > pdb.Status.DisruptionsAllowed {
			return &Blocker{ReasonPDB, fmt.Sprintf("PodDisruptionBudget %s/%s allows %d disruptions; draining needs %d (pod %s)",
				pdb.Namespace, pdb.Name, pdb.Status.DisruptionsAllowed, budget[pdb], name)}
		}
	}
	if safe == "true" {
		return nil
	}
	if metav1.GetControllerOf(p) == nil {
		return &Blocker{ReasonNoController, fmt.Sprintf("pod %s has no controller to recreate it; annotate it %s=true to allow it", name, AnnotationSafeToEvict)}
	}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium != corev1.StorageMediumMemory || v.HostPath != nil {
			return &Blocker{ReasonLocalStorage, fmt.Sprintf("pod %s keeps local storage in volume %s; annotate it %s=true to allow it", name, v.Name, AnnotationSafeToEvict)}
		}
	}
	if p.Namespace == metav1.NamespaceSystem && len(covering) == 0 {
		return &Blocker{ReasonKubeSystem, fmt.Sprintf("pod %s runs in kube-system without a PodDisruptionBudget", name)}
	}
	return nil
}
