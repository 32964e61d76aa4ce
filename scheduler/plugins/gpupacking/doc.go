// Package gpupacking is the GPU-packing baseline of the FGD paper's simulator: prefer
// putting a task on already shared GPUs (the less they have left, the better), then on
// fully free GPUs of a used node (the fewer needed, the better), then on an idle node.
package gpupacking
