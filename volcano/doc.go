// Package volcano turns Volcano's objects into Tessera's, for operators moving a cluster
// (or a GitOps repository) over: Queues (scheduling.volcano.sh/v1beta1), PodGroups,
// Volcano Jobs (batch.volcano.sh/v1alpha1: one PodGroup plus one batch/v1 Job per task,
// or, with Options.JobSet, one JobSet for a Job of several tasks, with the Secret and
// ConfigMap of its ssh and svc plugins) and batch/v1 Jobs annotated for Volcano. Every field that has no Tessera equivalent
// becomes a Note naming the object, the field and what to do instead; nothing is
// dropped silently.
//
// What it writes is what the API server accepts: Tessera objects pass the CRD's
// schema and CEL rules, batch/v1 Jobs get a restart policy a Job allows (Volcano does
// not need one), and input that cannot become such objects is an error naming the
// field: another version of a Volcano kind, numbers out of range (replicas beyond
// int32 or negative, a queue weight below 1), a gang larger than its Job's replicas,
// a task without containers.
package volcano
