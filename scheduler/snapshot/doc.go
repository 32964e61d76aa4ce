// Package snapshot converts Kubernetes objects (Nodes, GPUNodes, Queues, PodGroups,
// batch Jobs, Namespaces and Pods) into the scheduler's framework.Snapshot. It is pure:
// no API client, no controller-runtime; the scheduler daemon feeds it from its informer
// cache and the simulator from YAML manifests.
//
// A Builder collects objects (adding one again replaces it, Remove takes it out) and
// Build converts them. With a Memo a Builder is a maintained model: kept up to date
// with the cluster's changes and built once per session, it converts only the objects
// and assembles only the jobs that changed since the last build.
// An object that cannot be converted is left out and reported as an *ObjectError naming
// the object and the field; the rest of the snapshot is still built. Output order is
// deterministic: nodes by name, queues by name, jobs by creation time then
// namespace/name, tasks by pod name.
package snapshot
