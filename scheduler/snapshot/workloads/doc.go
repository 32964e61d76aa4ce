// Package workloads finds the whole-workload gang a pod belongs to, from what the
// controllers that made it write on it (labels, annotations, owner references,
// spec.schedulingGroup), and sizes the gang from the owning object: the Kubernetes
// Workload API's PodGroup, JobSet (and Kubeflow TrainJob through it), RayCluster
// (and RayJob through it), LeaderWorkerSet, Kubeflow PyTorchJob and MPIJob, the
// coscheduling plugin's PodGroup and Kueue's pod groups. It is pure: owning objects
// come in as unstructured objects, fed by the caller's informers.
package workloads
