// Package daemon runs the scheduler core against a real cluster: every period (and soon
// after a relevant change) it takes a snapshot from scheduler/cache, runs one session
// and commits it. Binder binds placed pods through the Binding subresource with their
// tessera.dev/gpu-assignment annotation (one write per pod, bounded concurrency) and
// keeps gangs whole: a gang left below minMember by failed binds is retried for one
// period, then its bound members are evicted. Evictor preempts through the Eviction API.
// StatusWriter reports PodGroup and Queue status, creates the PodGroups of implicit
// gangs, and records events on pods, writing only what changed.
package daemon
