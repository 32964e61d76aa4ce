// Package lint checks a GitOps repository of Tessera's configuration before it merges:
// the resources each kustomization lists exist, every custom resource passes the CRD's
// OpenAPI schema and CEL rules offline (the API server's own validation code), every
// AdmissionPolicy compiles and passes its tests beside the built-in policies, and
// cross-object rules hold (referenced queues and priority classes exist, deserved <=
// capability, parents exist and form no cycle, the deserved GPUs fit the cluster).
// Findings name file:line.
package lint
