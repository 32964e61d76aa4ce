package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/failpoint"
	"github.com/tessera-gpu/tessera/policy"
)

// Paths the webhook server serves.
const (
	MutatePath   = "/mutate"
	ValidatePath = "/validate"
)

// AuditPolicyVersion is the audit annotation carrying the deciding policy set's version.
const AuditPolicyVersion = "policy-version"

// PolicyChecker compiles an AdmissionPolicy with the set being served and runs its
// tests; it returns the errors, file:row first, or nil when the policy is acceptable.
type PolicyChecker interface {
	CheckPolicy(ctx context.Context, raw []byte) ([]string, error)
}

// Handler answers AdmissionReviews. One Handler is mutating (patches) or validating
// (denials and warnings). For the kinds in ValidateOnMutate the mutating handler also
// denies and warns: it evaluates every rule at once, each policy seeing the workload as
// the policies before it left it, so that the most frequent request, a pod create,
// costs one webhook call and one evaluation instead of two of each; the shipped
// ValidatingWebhookConfiguration leaves those kinds out. With reinvocationPolicy
// IfNeeded, mutations by later webhooks are validated when Tessera's runs again.
type Handler struct {
	Mutating bool
	// ValidateOnMutate lists kinds the mutating handler validates too.
	ValidateOnMutate map[string]bool
	Evaluator        policy.Evaluator
	Cluster          ClusterSource
	// Policies validates AdmissionPolicies (validating handler only); nil admits them.
	Policies PolicyChecker
	Metrics  *Metrics
	// Profiles, when set, finds the GPUProfiles by which a pod created in a queue with
	// spec.gpuRightSizing is right-sized (mutating handler only); nil right-sizes nothing.
	Profiles ProfileSource
	// Claims, when set, reads the resource claims pods name (input.workload.claimRequests);
	// nil: the policies see claims' GPUs as none.
	Claims ClaimSource
	// Guards refuse, before any policy runs, what no AdmissionPolicy may allow: scheduling
	// state written by anybody but the scheduler (StateGuard), GPU delivery env (EnvGuard),
	// a GPU-memory limit that cannot be honoured (LimitGuard),
	// a workload's queue and gang changed after creation (ImmutableGuard), a pod update
	// that lets a pod onto GPU nodes (PlacementGuard), privileged access to the node's
	// devices (PrivilegeGuard). They also see
	// requests the policies do not decide on: Pod UPDATEs, Bindings, pod templates.
	Guards []Guard
	// Log receives the decision log at V(2).
	Log logr.Logger
}

var _ http.Handler = (*Handler)(nil)

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "admission reviews are POSTed", http.StatusMethodNotAllowed)
		return
	}
	if err := failpoint.Inject(failpoint.WebhookReview); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "content type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxReviewBytes+1))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	review, err := DecodeReview(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp := h.Admit(r.Context(), review.Request)
	resp.UID = review.Request.UID
	out, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// decided reports whether the kind goes through the Rego policies, and for which
// operations the handler mutates it (spec.template of Jobs and most of a Pod's spec
// are immutable after create; a custom workload is decided on as a whole when it is
// created, and each of its pods again when the pod is).
func (h *Handler) decided(kind string, op admissionv1.Operation) bool {
	switch kind {
	case KindPod, KindJob:
		return op == admissionv1.Create
	case KindPodGroup:
		return op == admissionv1.Create || op == admissionv1.Update
	case KindQueue:
		return !h.Mutating && (op == admissionv1.Create || op == admissionv1.Update)
	}
	return isCustomWorkload[kind] && op == admissionv1.Create
}

// Admit decides one request.
func (h *Handler) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	start := time.Now()
	kind, op := req.Kind.Kind, req.Operation
	for _, g := range h.Guards {
		if msg := g.Check(req); msg != "" {
			h.Metrics.count(string(op), kind, ResultDenied)
			h.Log.V(2).Info("admission decision", "webhook", h.name(), "operation", op, "kind", kind, "namespace", req.Namespace,
				"name", objectName(req), "uid", req.UID, "user", req.UserInfo.Username, "result", ResultDenied, "denials", []string{msg})
			return guardDenial(msg)
		}
	}
	if kind == KindAdmissionPolicy && !h.Mutating && (op == admissionv1.Create || op == admissionv1.Update) {
		return h.admitPolicy(ctx, req)
	}
	if !h.decided(kind, op) {
		h.Metrics.count(string(op), kind, ResultAllowed)
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	resp, dec, result, err := h.decide(ctx, req)
	if dec.Version != "" {
		// The API server's audit log records which policy set decided.
		resp.AuditAnnotations = map[string]string{AuditPolicyVersion: dec.Version}
	}
	h.Metrics.count(string(op), kind, result)
	log := h.Log.V(2)
	if log.Enabled() {
		kv := []any{"webhook", h.name(), "operation", op, "kind", kind, "namespace", req.Namespace, "name", objectName(req),
			"uid", req.UID, "result", result, "policyVersion", dec.Version, "policies", dec.Evaluated, "duration", time.Since(start)}
		if len(dec.Mutations) > 0 {
			kv = append(kv, "mutations", dec.Mutations)
		}
		if len(dec.Denials) > 0 {
			kv = append(kv, "denials", texts(dec.Denials))
		}
		if len(dec.Warnings) > 0 {
			kv = append(kv, "warnings", texts(dec.Warnings))
		}
		if len(dec.DryRun) > 0 {
			kv = append(kv, "dryRun", texts(dec.DryRun))
		}
		if err != nil {
			kv = append(kv, "error", err.Error())
		}
		log.Info("admission decision", kv...)
	}
	return resp
}

func (h *Handler) name() string {
	if h.Mutating {
		return "mutating"
	}
	return "validating"
}

func (h *Handler) decide(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, policy.Decision, string, error) {
	var dec policy.Decision
	fail := func(code int32, err error) (*admissionv1.AdmissionResponse, policy.Decision, string, error) {
		return errorResponse(code, err), dec, ResultError, err
	}
	var ns *Namespace
	if req.Namespace != "" {
		var err error
		if ns, err = h.Cluster.Namespace(ctx, req.Namespace); err != nil {
			return fail(http.StatusInternalServerError, err)
		}
	}
	cluster, err := h.Cluster.Cluster(ctx)
	if err != nil {
		return fail(http.StatusInternalServerError, err)
	}
	phase := policy.PhaseValidate
	validateHere := h.Mutating && h.ValidateOnMutate[req.Kind.Kind]
	switch {
	case validateHere:
		// One evaluation: each policy's mutations and, on the workload as the policies
		// before it left it, its denials and warnings.
		phase = policy.PhaseAll
	case h.Mutating:
		phase = policy.PhaseMutate
	}
	pod, err := h.rightSizingCandidate(req, cluster)
	if err != nil {
		return fail(http.StatusBadRequest, err)
	}
	var sizing *rightSizing
	evaluate := func(queue string) (int32, error) {
		doc, s, err := h.input(ctx, req, ns, cluster, pod, queue)
		if err != nil {
			return http.StatusBadRequest, err
		}
		sizing = s
		if dec, err = h.Evaluator.Evaluate(ctx, policy.Input{Phase: phase, Kind: req.Kind.Kind, Document: doc, Shared: cluster.Shared}); err != nil {
			return http.StatusInternalServerError, fmt.Errorf("policy evaluation failed (policy set %s): %w", h.Evaluator.Version(), err)
		}
		return 0, nil
	}
	if code, err := evaluate(""); err != nil {
		return fail(code, err)
	}
	// Right-sizing followed the default queue policy; where the policies put the pod in
	// another queue, and either right-sizes, it follows theirs.
	if q := decidedQueue(pod, dec); q != "" && q != guessQueue(pod, ns) &&
		(cluster.RightSizing[q].Mode != "" || cluster.RightSizing[guessQueue(pod, ns)].Mode != "") {
		if code, err := evaluate(q); err != nil {
			return fail(code, err)
		}
	}
	if h.Mutating {
		var edit func(map[string]any)
		if sizing != nil && sizing.changesPod() {
			edit = sizing.edit
		}
		ops, ignored, err := buildPatch(req.Kind.Kind, req.Object.Raw, dec.Mutations, cluster.PriorityClasses, edit)
		if err != nil {
			return fail(http.StatusInternalServerError, err)
		}
		if len(ignored) > 0 {
			h.Log.V(1).Info("policy mutations have no place on this kind", "kind", req.Kind.Kind, "keys", ignored, "policyVersion", dec.Version)
		}
		resp := &admissionv1.AdmissionResponse{Allowed: true}
		var patch []byte
		if len(ops) > 0 {
			if patch, err = json.Marshal(ops); err != nil {
				return fail(http.StatusInternalServerError, err)
			}
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = patch, &pt
		}
		if validateHere {
			v, result := validationResponse(dec)
			if !v.Allowed {
				return v, dec, result, nil
			}
			resp.Warnings = v.Warnings
			if len(ops) == 0 {
				return resp, dec, result, nil
			}
		}
		if len(ops) == 0 {
			return resp, dec, ResultAllowed, nil
		}
		return resp, dec, ResultPatched, nil
	}
	resp, result := validationResponse(dec)
	return resp, dec, result, nil
}

// rightSizingCandidate is the pod of req when it may be right-sized: a GPU pod being
// created, seen by the mutating handler, with GPUProfiles to read and a queue that
// right-sizes; nil otherwise. Running pods are never resized.
func (h *Handler) rightSizingCandidate(req *admissionv1.AdmissionRequest, cluster *Cluster) (*corev1.Pod, error) {
	if !h.Mutating || h.Profiles == nil || req.Kind.Kind != KindPod || req.Operation != admissionv1.Create || len(cluster.RightSizing) == 0 {
		return nil, nil
	}
	var pod corev1.Pod
	if err := decodeObject(req.Object.Raw, &pod); err != nil {
		return nil, fmt.Errorf("decode Pod %s/%s: %w", req.Namespace, req.Name, err)
	}
	if !asksGPU(&pod) {
		return nil, nil
	}
	return &pod, nil
}

// input is the policy input of req. For a right-sizing candidate (pod not nil) it is
// the pod as right-sizing in queue (the guessed one when "") leaves it, so that the
// gang and capability checks see the slice, with input.recommendation.
func (h *Handler) input(ctx context.Context, req *admissionv1.AdmissionRequest, ns *Namespace, cluster *Cluster, pod *corev1.Pod, queue string) (map[string]any, *rightSizing, error) {
	if pod == nil {
		doc, err := BuildInput(req, ns)
		if err == nil {
			h.addClaimRequests(ctx, req, doc)
		}
		return doc, nil, err
	}
	if queue == "" {
		queue = guessQueue(pod, ns)
	}
	s := h.planRightSizing(ctx, pod, ns, cluster, queue)
	in := req
	if s != nil && s.container >= 0 {
		raw, err := s.editRaw(req.Object.Raw)
		if err != nil {
			return nil, nil, err
		}
		sized := *req
		sized.Object.Raw = raw
		in = &sized
	}
	doc, err := BuildInput(in, ns)
	if err != nil {
		return nil, nil, err
	}
	h.addClaimRequests(ctx, in, doc)
	if s != nil {
		doc["recommendation"] = s.doc(pod)
	}
	return doc, s, nil
}

// decidedQueue is the queue the policies put pod in: their queue mutation, else its
// label; "" for no pod.
func decidedQueue(pod *corev1.Pod, dec policy.Decision) string {
	if pod == nil {
		return ""
	}
	if q, ok := dec.Mutations[MutateQueue].(string); ok && q != "" {
		return q
	}
	return pod.Labels[tesserav1.LabelQueue]
}

// validationResponse turns a validation decision into a response and its result label.
func validationResponse(dec policy.Decision) (*admissionv1.AdmissionResponse, string) {
	resp := &admissionv1.AdmissionResponse{Allowed: dec.Allowed(), Warnings: texts(dec.Warnings)}
	if !dec.Allowed() {
		resp.Result = &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusForbidden,
			Reason:  metav1.StatusReasonForbidden,
			Message: fmt.Sprintf("denied by Tessera policy set %s: %s", dec.Version, joinMessages(dec.Denials)),
		}
		return resp, ResultDenied
	}
	if len(resp.Warnings) > 0 {
		return resp, ResultWarned
	}
	return resp, ResultAllowed
}

func (h *Handler) admitPolicy(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	op := string(req.Operation)
	if h.Policies == nil {
		h.Metrics.count(op, KindAdmissionPolicy, ResultAllowed)
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	errs, err := h.Policies.CheckPolicy(ctx, req.Object.Raw)
	if err != nil {
		h.Metrics.count(op, KindAdmissionPolicy, ResultError)
		return errorResponse(http.StatusBadRequest, err)
	}
	if len(errs) > 0 {
		h.Metrics.count(op, KindAdmissionPolicy, ResultDenied)
		h.Log.V(2).Info("admission decision", "webhook", h.name(), "operation", op, "kind", KindAdmissionPolicy,
			"name", req.Name, "uid", req.UID, "result", ResultDenied, "errors", errs)
		return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusUnprocessableEntity,
			Reason:  metav1.StatusReasonInvalid,
			Message: fmt.Sprintf("AdmissionPolicy %s is rejected: %s", req.Name, strings.Join(errs, "; ")),
		}}
	}
	h.Metrics.count(op, KindAdmissionPolicy, ResultAllowed)
	return &admissionv1.AdmissionResponse{Allowed: true}
}

func errorResponse(code int32, err error) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Message: err.Error(),
	}}
}

func objectName(req *admissionv1.AdmissionRequest) string {
	if req.Name != "" {
		return req.Name
	}
	var m struct {
		Metadata struct {
			Name         string `json:"name"`
			GenerateName string `json:"generateName"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(req.Object.Raw, &m)
	if m.Metadata.Name != "" {
		return m.Metadata.Name
	}
	return m.Metadata.GenerateName
}

func texts(ms []policy.Message) []string {
	if len(ms) == 0 {
		return nil
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text
	}
	return out
}

func joinMessages(ms []policy.Message) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Policy + ": " + m.Text
	}
	return strings.Join(parts, "; ")
}
