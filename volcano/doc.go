// Package volcano turns Volcano's objects into Tessera's, for operators moving a cluster
// (or a GitOps repository) over: Queues (scheduling.volcano.sh/v1beta1), PodGroups,
// Volcano Jobs (batch.volcano.sh/v1alpha1: one PodGroup plus one batch/v1 Job per task)
// and batch/v1 Jobs annotated for Volcano. Every field that has no Tessera equivalent
// becomes a Note naming the object, the field and what to do instead; nothing is
// dropped silently.
package volcano
