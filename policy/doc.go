// Package policy evaluates admission policies written in Rego.
//
// The Evaluator interface speaks plain Go values (maps, strings, numbers) and knows
// nothing of Kubernetes. Its OPA implementation, Engine, compiles a policy Set once
// (ast.Compiler + rego.PrepareForEval), runs the set's _test.rego tests, and swaps the
// prepared queries in atomically, so a broken set never replaces a good one. Builtins
// that reach the network or make a decision depend on anything but the input
// (http.send, net.*, time.now_ns, rand.*, uuid.*, opa.runtime, trace, ...) are removed
// through the compiler's capabilities, and every evaluation runs under a deadline.
//
// A policy is a Rego package below tessera. It may define any of three rules:
//
//	mutate  an object of workload fields to set, e.g. {"queue": "train"}
//	deny    a set of messages that reject the request
//	warn    a set of messages returned as admission warnings
//
// Policies run in Order; each sees, in input.workload, the fields that earlier
// policies set. Every Decision carries the Version (a content hash) of the set that
// produced it.
package policy
