package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/policy"
	"github.com/tessera-gpu/tessera/rego"
)

// Local decides object creates without an API server, through the same handlers and
// policies as the webhooks: the simulator runs a user's manifests through it before
// scheduling them.
type Local struct {
	mutating, validating *Handler
	// Warnings are about the policy set itself: AdmissionPolicies replacing built-ins.
	Warnings []string
}

// DeniedError is a create the policies deny; Messages are their reasons.
type DeniedError struct {
	Kind, Name string
	Messages   string
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("%s %s denied by admission policy: %s", e.Kind, e.Name, e.Messages)
}

// NewLocal compiles the default policies plus policies (AdmissionPolicy objects, in
// spec.order, then name order, as the webhook loads them) and decides on cluster's
// data. A policy that does not compile or fails its tests is an error with the
// compiler's file:row messages; so is one named like a built-in policy without
// spec.replaceBuiltin (Warnings name those replaced on purpose).
func NewLocal(ctx context.Context, policies []tesserav1.AdmissionPolicy, cluster ClusterSource) (*Local, error) {
	defaults, err := rego.Defaults()
	if err != nil {
		return nil, err
	}
	set := defaults
	var warnings []string
	aps := slices.Clone(policies)
	sortPolicies(aps)
	for i := range aps {
		var warning string
		if set, warning, err = withPolicy(set, defaults, &aps[i]); err != nil {
			return nil, fmt.Errorf("AdmissionPolicy %s: %w", aps[i].Name, err)
		}
		if warning != "" {
			warnings = append(warnings, warning)
		}
	}
	engine := policy.NewEngine(0, policy.NewMetrics(nil))
	if _, err := engine.Load(ctx, set); err != nil {
		return nil, fmt.Errorf("admission policies: %w", err)
	}
	h := func(mutating bool) *Handler {
		return &Handler{Mutating: mutating, ValidateOnMutate: map[string]bool{KindPod: true}, Evaluator: engine,
			Cluster: cluster, Metrics: NewMetrics(nil), Log: logr.Discard()}
	}
	return &Local{mutating: h(true), validating: h(false), Warnings: warnings}, nil
}

// Admit decides the create of obj (a *corev1.Pod, *batchv1.Job, *tesserav1.PodGroup or
// *tesserav1.Queue) as the API server would call the webhooks: obj is changed in place
// as the mutating webhook's patch says, then validated. It returns the policies'
// warnings; a denial is a *DeniedError.
func (l *Local) Admit(ctx context.Context, obj runtime.Object) ([]string, error) {
	gvk, meta, err := kindOf(obj)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	name := meta.GetName()
	if ns := meta.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	var warnings []string
	for _, h := range []*Handler{l.mutating, l.validating} {
		if h == l.validating && l.mutating.ValidateOnMutate[gvk.Kind] {
			break
		}
		req := &admissionv1.AdmissionRequest{
			UID: types.UID("local-" + name), Kind: gvk, Operation: admissionv1.Create,
			Namespace: meta.GetNamespace(), Name: meta.GetName(), Object: runtime.RawExtension{Raw: raw},
		}
		resp := h.Admit(ctx, req)
		warnings = append(warnings, resp.Warnings...)
		if !resp.Allowed {
			msg := "denied"
			if resp.Result != nil && resp.Result.Message != "" {
				msg = resp.Result.Message
			}
			return warnings, &DeniedError{Kind: gvk.Kind, Name: name, Messages: msg}
		}
		if len(resp.Patch) > 0 {
			patch, err := jsonpatch.DecodePatch(resp.Patch)
			if err == nil {
				raw, err = patch.Apply(raw)
			}
			if err != nil {
				return warnings, fmt.Errorf("%s %s: apply the mutating webhook's patch: %w", gvk.Kind, name, err)
			}
		}
	}
	// Decode into a zeroed object, so that fields the patch removed are gone.
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
	if err := json.Unmarshal(raw, obj); err != nil {
		return warnings, fmt.Errorf("%s %s: decode the admitted object: %w", gvk.Kind, name, err)
	}
	return warnings, nil
}

func kindOf(obj runtime.Object) (metav1.GroupVersionKind, metav1.Object, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return metav1.GroupVersionKind{Version: "v1", Kind: KindPod}, o, nil
	case *batchv1.Job:
		return metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: KindJob}, o, nil
	case *tesserav1.PodGroup:
		return tesseraKind(KindPodGroup), o, nil
	case *tesserav1.Queue:
		return tesseraKind(KindQueue), o, nil
	}
	return metav1.GroupVersionKind{}, nil, fmt.Errorf("admission of %T is not supported; use a Pod, Job, PodGroup or Queue", obj)
}

func tesseraKind(kind string) metav1.GroupVersionKind {
	return metav1.GroupVersionKind{Group: tesserav1.GroupVersion.Group, Version: tesserav1.GroupVersion.Version, Kind: kind}
}

// DenialMessage is the policies' reasons (sim.Admitter's denial contract).
func (e *DeniedError) DenialMessage() string { return e.Messages }
