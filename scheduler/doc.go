// Package scheduler is Tessera's pure scheduling core. A Scheduler is built from a
// Config (actions and plugins, Volcano-shaped); RunSession takes a framework.Snapshot,
// runs the actions in order (default enqueue, allocate, preempt, reclaim, backfill)
// and returns the decisions: bindings with concrete GPUs, evictions, and for every job
// left pending a machine-readable reason and a message.
//
// Placement is tentative inside a Statement and committed only when a whole gang
// (minMember tasks) fits, so no partial gang is ever bound. The package imports no
// API client; scheduler/k8s and sim drive it.
package scheduler
