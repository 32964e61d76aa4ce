// Package v1alpha1 holds Tessera's API types in the group tessera.dev/v1alpha1:
// Queue, PodGroup, GPUNode, ScaleDownPolicy and AdmissionPolicy, together with the
// well-known names (resources, labels, annotations) that every component shares.
//
// The CRD manifests in deploy/crds are generated from these types by controller-gen
// (`make generate`); validation lives in the kubebuilder markers so that the API
// server rejects bad objects with a message naming the field.
//
// +kubebuilder:object:generate=true
// +groupName=tessera.dev
package v1alpha1
