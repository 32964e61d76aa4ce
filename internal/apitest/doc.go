// Package apitest builds the Kubernetes and Tessera API objects that tests hand to
// fake clients, the API server, the snapshot builder and the admission handlers, in the
// style of Kueue's test wrappers:
//
//	pod := apitest.MakePod("train-0", "team").GPU(8).Queue("train").Group("train").Obj()
//
// Each MakeX starts from a small, valid object (a pod has one container "main"); its
// setters return the wrapper so that they chain, and Obj returns the object. Every
// wrapper has the metadata setters Label, Annotation, UID, Created and Deleting.
// Obj returns the wrapper's own object: build a new wrapper for a new object.
//
// The package builds API objects only; scheduler/testutil builds the scheduler's
// snapshot model (framework.Node, framework.Job) directly.
package apitest
