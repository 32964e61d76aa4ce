package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
)

// MaxReviewBytes bounds an AdmissionReview body (the API server's own limit is 3 MiB
// of object plus the envelope).
const MaxReviewBytes = 7 << 20

// DecodeReview parses an admission.k8s.io/v1 AdmissionReview request body and checks
// what the handlers rely on: the version, a request with a UID and a kind.
func DecodeReview(body []byte) (*admissionv1.AdmissionReview, error) {
	if len(body) == 0 {
		return nil, errors.New("empty AdmissionReview body")
	}
	if len(body) > MaxReviewBytes {
		return nil, fmt.Errorf("AdmissionReview of %d bytes exceeds the %d byte limit", len(body), MaxReviewBytes)
	}
	var review admissionv1.AdmissionReview
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&review); err != nil {
		return nil, fmt.Errorf("decode AdmissionReview: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decode AdmissionReview: trailing data after the object")
	}
	if review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("got %s %q, want apiVersion admission.k8s.io/v1 kind AdmissionReview (set admissionReviewVersions: [v1])",
			review.Kind, review.APIVersion)
	}
	req := review.Request
	if req == nil {
		return nil, errors.New("AdmissionReview has no request")
	}
	if req.UID == "" {
		return nil, errors.New("AdmissionReview request has no uid")
	}
	if req.Kind.Kind == "" {
		return nil, errors.New("AdmissionReview request has no kind")
	}
	return &review, nil
}
