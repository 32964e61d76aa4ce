// Package livecluster reads a live cluster's objects into the simulator's input
// (trace.Manifests), for `tessera simulate --from-cluster`: the one place where the
// simulator's input comes through a client, so that package sim and its subpackages
// stay client-free.
package livecluster
