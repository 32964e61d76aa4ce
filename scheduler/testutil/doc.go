// Package testutil builds scheduler snapshots for tests and benchmarks with small
// wrappers: MakeNode("n").GPUs(8, "A100-80GB").Obj(), MakeJob("j").Tasks(4).GPU(8).Obj().
package testutil
