package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// KindBinding is the kind of a pods/binding create: how a scheduler places a pod.
const KindBinding = "Binding"

// SchedulerServiceAccount is the scheduler's ServiceAccount, as the chart names it.
const SchedulerServiceAccount = "tessera-scheduler"

// SchedulerUser is the user name the API server gives the scheduler's ServiceAccount
// in namespace ns (Tessera's namespace).
func SchedulerUser(ns string) string {
	return "system:serviceaccount:" + ns + ":" + SchedulerServiceAccount
}

// A Guard refuses a request before any policy runs. Guards are Go, not Rego policies,
// so that no AdmissionPolicy can replace them.
type Guard interface {
	// Check returns why req is refused, or "" when the guard lets it through.
	Check(req *admissionv1.AdmissionRequest) string
}

var _ Guard = (*StateGuard)(nil)

// StateGuard keeps scheduling state the scheduler's: the annotations of
// tesserav1.SchedulingStateAnnotations may be set on a pod (on create, on update, in a
// Job's pod template or through a Binding) only by the scheduler's identity; anybody else
// may only leave them as they are. It is Go, not a Rego policy, so that no
// AdmissionPolicy can replace it: the node agent hands out GPUs on the strength of it.
type StateGuard struct {
	// Users are the user names allowed to write scheduling state: the scheduler's
	// ServiceAccount (SchedulerUser). Empty: nobody.
	Users []string
}

// Check returns why req writes scheduling state it may not, or "" when it does not.
func (g *StateGuard) Check(req *admissionv1.AdmissionRequest) string {
	kind, op := req.Kind.Kind, req.Operation
	var where, verb string
	switch {
	case kind == KindPod && op == admissionv1.Create:
		where, verb = "metadata.annotations", "set"
	case kind == KindPod && op == admissionv1.Update:
		where, verb = "metadata.annotations", "add, change or remove"
	case kind == KindJob && op == admissionv1.Create:
		where, verb = "spec.template.metadata.annotations", "set"
	case kind == KindBinding && op == admissionv1.Create:
		where, verb = "the Binding's metadata.annotations", "set"
	default:
		return ""
	}
	// Almost no request carries the keys at all: look for them before decoding.
	if !mentionsState(req.Object.Raw) && !mentionsState(req.OldObject.Raw) {
		return ""
	}
	now, err := stateOf(kind, req.Object.Raw)
	if err != nil {
		return fmt.Sprintf("cannot read the %s's annotations: %v", kind, err)
	}
	var before map[string]string
	if op == admissionv1.Update {
		if before, err = stateOf(kind, req.OldObject.Raw); err != nil {
			return fmt.Sprintf("cannot read the %s's previous annotations: %v", kind, err)
		}
	}
	for _, key := range tesserav1.SchedulingStateAnnotations {
		v, ok := now[key]
		old, had := before[key]
		if ok == had && v == old {
			continue
		}
		user := req.UserInfo.Username
		if slices.Contains(g.Users, user) {
			return ""
		}
		field := where + "[" + key + "]"
		fix := "remove it: the tessera scheduler records the GPUs it assigns when it binds the pod"
		switch {
		case op == admissionv1.Update:
			fix = "leave it as the scheduler wrote it (or delete the pod and create it again without it)"
		case kind == KindBinding:
			fix = "bind without Tessera's annotations, or let the tessera scheduler place the pod"
		}
		return fmt.Sprintf("%s is scheduling state that only the tessera scheduler (%s) writes; user %q may not %s it: %s",
			field, g.who(), user, verb, fix)
	}
	return ""
}

func (g *StateGuard) who() string {
	switch len(g.Users) {
	case 0:
		return "no user configured"
	case 1:
		return g.Users[0]
	}
	return fmt.Sprint(g.Users)
}

func mentionsState(raw []byte) bool {
	for _, key := range tesserav1.SchedulingStateAnnotations {
		if bytes.Contains(raw, []byte(key)) {
			return true
		}
	}
	return false
}

// stateMeta is the part of a Pod, Job or Binding that can carry scheduling state.
type stateMeta struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Template struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		} `json:"template"`
	} `json:"spec"`
}

func stateOf(kind string, raw []byte) (map[string]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var m stateMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if kind == KindJob {
		return m.Spec.Template.Metadata.Annotations, nil
	}
	return m.Metadata.Annotations, nil
}

// guardDenial is the response to a request the StateGuard refuses.
func guardDenial(msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusForbidden,
		Reason:  metav1.StatusReasonForbidden,
		Message: "denied by Tessera: " + msg,
	}}
}
