// Package proportion shares the cluster between queues: capability is a hard cap,
// guarantee is never lent, deserved is what a queue gets under contention (explicit, or
// split by weight), and what no queue deserves is split by weight among queues that
// want more. Queues are served lowest dominant share (DRF over cpu, memory and GPU)
// first; a queue under its entitlement may reclaim from reclaimable queues above theirs.
package proportion
