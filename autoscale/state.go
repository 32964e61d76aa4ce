package autoscale

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Node taint, annotation and label of a scale-down in progress.
const (
	// TaintCandidate marks a node being scaled down; the scheduler avoids it.
	TaintCandidate = "tessera.dev/scale-down-candidate"
	// AnnotationScaleDown on a node holds its ScaleDown state as JSON: the actuator's
	// only record of where a scale-down stands, so that another replica, or the same one
	// after a crash, carries on from there.
	AnnotationScaleDown = "tessera.dev/scale-down"
	// LabelRemovable marks a drained node that has no Cluster API Machine: it stays
	// cordoned for its owner to remove.
	LabelRemovable = "tessera.dev/removable"
)

// Phase is how far a node's scale-down went.
type Phase string

// The phases, in order. Candidate: tainted, waiting for the re-validation. Draining:
// cordoned, its pods being evicted. Drained: no pod left to evict. Removing: its Machine
// is marked for deletion and its node group is being lowered by one. Removed: done; the
// node waits for its Machine to go (or, without one, for its owner).
const (
	PhaseCandidate Phase = "Candidate"
	PhaseDraining  Phase = "Draining"
	PhaseDrained   Phase = "Drained"
	PhaseRemoving  Phase = "Removing"
	PhaseRemoved   Phase = "Removed"
)

// ScaleDown is the state of one node's scale-down, kept on the node.
type ScaleDown struct {
	Policy string `json:"policy"`
	// Method is the candidate method that chose the node (Empty, Underused).
	Method string `json:"method"`
	Phase  Phase  `json:"phase"`
	// Since is when the current phase began.
	Since time.Time `json:"since"`
	// WasUnschedulable is set when the node was cordoned before the scale-down began:
	// cancelling leaves it cordoned.
	WasUnschedulable bool `json:"wasUnschedulable,omitempty"`
	// Machine names the Cluster API Machine marked for deletion (namespace/name).
	Machine string `json:"machine,omitempty"`
}

// StateOf reads node's scale-down state; nil when none is in progress.
func StateOf(node *corev1.Node) (*ScaleDown, error) {
	v, ok := node.Annotations[AnnotationScaleDown]
	if !ok {
		return nil, nil
	}
	var s ScaleDown
	if err := json.Unmarshal([]byte(v), &s); err != nil || s.Phase == "" {
		return nil, fmt.Errorf("node %s: annotation %s %q is not a scale-down state (%v); remove it to cancel the scale-down", node.Name, AnnotationScaleDown, v, err)
	}
	return &s, nil
}

// Encode returns the annotation value.
func (s *ScaleDown) Encode() string {
	b, _ := json.Marshal(s) // a struct of strings, a time and a bool always encodes
	return string(b)
}

// Tainted reports whether node carries the scale-down candidate taint.
func Tainted(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == TaintCandidate {
			return true
		}
	}
	return false
}
