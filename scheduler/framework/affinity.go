package framework

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// HasNodeConstraints reports whether the task restricts nodes by selector or affinity.
func (t *Task) HasNodeConstraints() bool {
	return len(t.NodeSelector) > 0 || (t.Affinity != nil && t.Affinity.NodeAffinity != nil)
}

// RequiredAffinity is the task's nodeSelector and required node affinity, compiled once.
func (t *Task) RequiredAffinity() *nodeaffinity.RequiredNodeAffinity {
	if t.affinity == nil {
		a := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: corev1.PodSpec{NodeSelector: t.NodeSelector, Affinity: t.Affinity}})
		t.affinity = &a
	}
	return t.affinity
}

// Object returns a minimal corev1.Node (name and labels) for component-helpers matchers.
func (n *Node) Object() *corev1.Node {
	if n.object == nil {
		n.object = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}}
	}
	return n.object
}
