// Package webhooks serves Tessera's admission webhooks. A request is decoded
// (DecodeReview), turned into a policy input of plain Go values (BuildInput), decided
// by a policy.Evaluator, and answered with a minimal, idempotent JSON patch
// (mutating) or an allow / deny with warnings (validating).
//
// Kinds: Pods, batch/v1 Jobs, PodGroups, Queues and the workload controllers' custom
// resources (CustomWorkloads: JobSet, RayCluster, ..., each with all its pod templates,
// podTemplates) go through the Rego policies; AdmissionPolicies are compiled and their tests run before they are accepted
// (PolicyController), and the controller writes their status. Cluster data the
// policies need (queues, GPU sizes, priority classes) comes from a ClusterSource
// fed by informers. A GPU pod created in a queue with spec.gpuRightSizing is
// right-sized from its workload's GPUProfile (ProfileSource) before the policies decide
// on it: they see input.recommendation and, in mode Auto, the pod with its slice.
// Local makes the same decisions without an API server, for the simulator.
package webhooks
