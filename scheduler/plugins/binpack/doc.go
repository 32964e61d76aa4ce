// Package binpack scores nodes by how full they would be after placing the task, with
// Volcano's binpack formula and arguments (binpack.weight, binpack.cpu, binpack.memory,
// binpack.resources, binpack.resources.<name>), so that idle nodes stay idle and can be
// removed.
package binpack
