package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/policy"
)

// Condition reasons on AdmissionPolicies.
const (
	ReasonCompiled      = "Compiled"
	ReasonCompileFailed = "CompileFailed"
	ConditionStalled    = "Stalled"
)

// PolicyFile is the file name an AdmissionPolicy's Rego has in messages.
func PolicyFile(name string) string { return "admissionpolicy/" + name + ".rego" }

// ToPolicy converts an AdmissionPolicy into the engine's Policy.
func ToPolicy(ap *tesserav1.AdmissionPolicy) policy.Policy {
	targets := make([]string, len(ap.Spec.Targets))
	for i, t := range ap.Spec.Targets {
		targets[i] = string(t)
	}
	enf := policy.Enforcement(ap.Spec.Enforcement)
	if enf == "" {
		enf = policy.EnforceDeny
	}
	return policy.Policy{
		Name:        ap.Name,
		Order:       int(ap.Spec.Order),
		Enforcement: enf,
		Targets:     targets,
		Module:      policy.Module{File: PolicyFile(ap.Name), Source: ap.Spec.Rego},
	}
}

// withPolicy adds an AdmissionPolicy to set. A policy named like one of defaults (a
// built-in) replaces it only when spec.replaceBuiltin says so, and then with a
// warning; otherwise, and for replaceBuiltin without a built-in of that name, the
// reason is returned and set is unchanged.
func withPolicy(set, defaults policy.Set, ap *tesserav1.AdmissionPolicy) (policy.Set, string, error) {
	var builtins []string
	for _, p := range defaults.Policies {
		builtins = append(builtins, p.Name)
	}
	builtin := slices.Contains(builtins, ap.Name)
	switch {
	case builtin && !ap.Spec.ReplaceBuiltin:
		return set, "", fmt.Errorf("metadata.name: %q is the name of a built-in policy; choose another name to add a policy, or set spec.replaceBuiltin: true to replace the built-in", ap.Name)
	case !builtin && ap.Spec.ReplaceBuiltin:
		return set, "", fmt.Errorf("spec.replaceBuiltin: there is no built-in policy named %q; built-ins: %s", ap.Name, strings.Join(builtins, ", "))
	case builtin:
		return set.With(ToPolicy(ap)), fmt.Sprintf("AdmissionPolicy %s replaces the built-in policy %s (spec.replaceBuiltin)", ap.Name, ap.Name), nil
	}
	return set.With(ToPolicy(ap)), "", nil
}

// sortPolicies puts AdmissionPolicies in the order they join the set: spec.order,
// then name.
func sortPolicies(items []tesserav1.AdmissionPolicy) {
	sort.Slice(items, func(i, j int) bool {
		if items[i].Spec.Order != items[j].Spec.Order {
			return items[i].Spec.Order < items[j].Spec.Order
		}
		return items[i].Name < items[j].Name
	})
}

// PolicyController keeps the engine serving the default policies plus every
// AdmissionPolicy that compiles and passes its tests, and writes each policy's status.
// A policy that stops compiling keeps serving its last good version. It also checks
// AdmissionPolicies for the validating webhook (PolicyChecker). The last good version is
// kept in status.lastGood, so that a webhook that restarts serves it too.
type PolicyController struct {
	Client   client.Client
	Engine   *policy.Engine
	Defaults policy.Set
	Log      logr.Logger
	// Metrics, when set, reports whether each AdmissionPolicy compiles.
	Metrics *Metrics

	mu       sync.Mutex
	lastGood map[string]policy.Policy
	served   *policy.Set
}

var (
	_ PolicyChecker        = (*PolicyController)(nil)
	_ reconcile.Reconciler = (*PolicyController)(nil)
)

// Start loads the default set so the webhook serves before the first reconcile.
func (r *PolicyController) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.served != nil {
		return nil
	}
	if _, err := r.Engine.Load(ctx, r.Defaults); err != nil {
		return fmt.Errorf("default policies: %w", err)
	}
	set := r.Defaults
	r.served = &set
	return nil
}

// CheckPolicy implements PolicyChecker: the set being served, with this policy added
// or replaced, must compile and pass its tests.
func (r *PolicyController) CheckPolicy(ctx context.Context, raw []byte) ([]string, error) {
	var ap tesserav1.AdmissionPolicy
	if err := json.Unmarshal(raw, &ap); err != nil {
		return nil, fmt.Errorf("decode AdmissionPolicy: %w", err)
	}
	r.mu.Lock()
	base := r.Defaults
	if r.served != nil {
		base = *r.served
	}
	r.mu.Unlock()
	candidate, _, err := withPolicy(base, r.Defaults, &ap)
	if err != nil {
		return []string{err.Error()}, nil
	}
	_, err = r.Engine.Check(ctx, candidate)
	return compileErrors(err)
}

func compileErrors(err error) ([]string, error) {
	if err == nil {
		return nil, nil
	}
	var ce *policy.CompileError
	if errors.As(err, &ce) {
		return ce.Errors, nil
	}
	return nil, err
}

// Reconcile rebuilds the whole set on any AdmissionPolicy change.
func (r *PolicyController) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var list tesserav1.AdmissionPolicyList
	if err := r.Client.List(ctx, &list); err != nil {
		return reconcile.Result{}, err
	}
	items := list.Items
	sortPolicies(items)

	r.mu.Lock()
	if r.lastGood == nil {
		r.lastGood = map[string]policy.Policy{}
	}
	set := r.Defaults
	errs := make(map[string][]string, len(items))
	// fallback names the broken policies whose last good version serves.
	fallback := map[string]bool{}
	present := map[string]bool{}
	for i := range items {
		ap := &items[i]
		present[ap.Name] = true
		if !ap.DeletionTimestamp.IsZero() {
			continue
		}
		p := ToPolicy(ap)
		candidate, warning, err := withPolicy(set, r.Defaults, ap)
		if err != nil {
			errs[ap.Name] = []string{err.Error()}
			continue
		}
		if warning != "" {
			r.Log.Info(warning)
		}
		_, err = r.Engine.Check(ctx, candidate)
		msgs, hard := compileErrors(err)
		if hard != nil {
			r.mu.Unlock()
			return reconcile.Result{}, hard
		}
		if len(msgs) == 0 {
			set = candidate
			r.lastGood[ap.Name] = p
			errs[ap.Name] = nil
			continue
		}
		errs[ap.Name] = msgs
		if good, ok := r.lastGoodOf(ap); ok {
			if _, err := r.Engine.Check(ctx, set.With(good)); err == nil {
				set = set.With(good)
				r.lastGood[ap.Name] = good
				fallback[ap.Name] = true
			}
		}
	}
	for name := range r.lastGood {
		if !present[name] {
			delete(r.lastGood, name)
		}
	}
	compiled, err := r.Engine.Load(ctx, set)
	if err == nil {
		r.served = &set
	}
	r.mu.Unlock()
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("policy set that passed piecewise checks failed as a whole: %w", err)
	}
	r.Log.V(1).Info("policy set loaded", "version", compiled.Version(), "policies", compiled.Policies())

	var firstErr error
	compiledNow := make(map[string]bool, len(items))
	for i := range items {
		ap := &items[i]
		if !ap.DeletionTimestamp.IsZero() {
			continue
		}
		compiledNow[ap.Name] = len(errs[ap.Name]) == 0
		if err := r.writeStatus(ctx, ap, errs[ap.Name], fallback[ap.Name], compiled.Version()); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	r.Metrics.setPolicies(compiledNow)
	return reconcile.Result{}, firstErr
}

// lastGoodOf is the last good version of a policy: the one this controller served, or
// else the one its status keeps from an earlier run.
func (r *PolicyController) lastGoodOf(ap *tesserav1.AdmissionPolicy) (policy.Policy, bool) {
	if good, ok := r.lastGood[ap.Name]; ok {
		return good, true
	}
	if ap.Status.LastGood == nil {
		return policy.Policy{}, false
	}
	prev := ap.DeepCopy()
	prev.Spec = *ap.Status.LastGood
	return ToPolicy(prev), true
}

// writeStatus reports a policy's compile errors (none: it serves, and becomes the last
// good version); fallback says that its last good version serves in its place.
func (r *PolicyController) writeStatus(ctx context.Context, ap *tesserav1.AdmissionPolicy, errs []string, fallback bool, version string) error {
	st := ap.Status.DeepCopy()
	st.ObservedGeneration = ap.Generation
	st.Compiled = len(errs) == 0
	if len(errs) > 50 {
		errs = errs[:50]
	}
	st.Errors = errs
	gen := ap.Generation
	if st.Compiled {
		st.LastGood, st.LastGoodGeneration = ap.Spec.DeepCopy(), gen
		msg := "compiled and its tests pass; serving in policy set " + version
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: tesserav1.ConditionCompiled, Status: metav1.ConditionTrue, Reason: ReasonCompiled, Message: msg, ObservedGeneration: gen})
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: tesserav1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonCompiled, Message: msg, ObservedGeneration: gen})
		meta.RemoveStatusCondition(&st.Conditions, ConditionStalled)
	} else {
		msg := errs[0]
		if len(errs) > 1 {
			msg = fmt.Sprintf("%s (and %d more, see status.errors)", errs[0], len(errs)-1)
		}
		if fallback {
			msg += fmt.Sprintf("; generation %d (status.lastGood) keeps serving", st.LastGoodGeneration)
		} else {
			msg += "; no version of this policy serves"
		}
		for _, t := range []string{tesserav1.ConditionCompiled, tesserav1.ConditionReady, ConditionStalled} {
			status := metav1.ConditionFalse
			if t == ConditionStalled {
				status = metav1.ConditionTrue
			}
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: status, Reason: ReasonCompileFailed, Message: msg, ObservedGeneration: gen})
		}
	}
	if equality.Semantic.DeepEqual(st, &ap.Status) {
		return nil
	}
	updated := ap.DeepCopy()
	updated.Status = *st
	if err := r.Client.Status().Update(ctx, updated); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // a newer version is queued, or the policy is gone
		}
		return fmt.Errorf("write status of AdmissionPolicy %s: %w", ap.Name, err)
	}
	return nil
}
