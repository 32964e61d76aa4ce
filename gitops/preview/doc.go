// Package preview shows what a change to a GitOps repository of Tessera's
// configuration does before it merges: the queues, admission policies, priority
// classes and namespaces of a base and a head version of a cluster's kustomization are
// each laid over the same cluster (a YAML dump or the live objects), pass the admission
// policies and are scheduled by the simulator, and the difference is reported per
// queue (GPUs held, pods running and pending, objects denied or rewritten by the
// policies) as text or as markdown for a pull request. Results depend only on the
// inputs and the seed.
package preview
