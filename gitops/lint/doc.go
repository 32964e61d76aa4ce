// Package lint checks a GitOps repository of Tessera's configuration before it merges:
// the resources each kustomization lists exist, every custom resource passes the CRD's
// OpenAPI schema and CEL rules offline (the API server's own validation code), every
// AdmissionPolicy compiles and passes its tests beside the built-in policies, and
// cross-object rules hold (referenced queues and priority classes exist, deserved <=
// capability, parents exist and form no cycle, the deserved GPUs fit the cluster).
// Findings name file:line.
//
// Pull requests are untrusted input, so reading is bounded: kustomizations are read
// once each, a cycle or nesting deeper than MaxDepth is an error naming the files, a
// file outside its kustomization's directory is refused as kustomize refuses it, and
// files (yamlerr.MaxFileBytes, MaxBytes together), objects (MaxObjects) and YAML
// alias expansion (yamlerr.MaxAliasNodes) have limits, each named in its error.
// Kustomizations whose fields keep every object's identity (resources, common labels
// and annotations) are checked without running kustomize, whose duplicate check is
// quadratic in the objects; the linter checks duplicates itself.
package lint
