// Package sim is Tessera's discrete-event simulator: it drives the real scheduler core
// (package scheduler) over cluster traces on a virtual clock, deterministically per
// seed. Fill-up mode follows the FGD paper's protocol (pods arrive until their GPU
// request reaches a multiple of the cluster and never leave); replay mode plays jobs'
// arrivals and completions through queues, gangs, preemption and backfill. Manifests
// mode schedules a cluster described in YAML, after passing its objects through the
// admission policies (an Admitter: the webhooks' own handlers, wired by the command).
//
// A replay with Autoscaling turns nodes off and on: a scale-down rule (Tessera's own
// autoscale.Planner, Cluster Autoscaler's scale-down or Karpenter's consolidation)
// removes nodes, and while jobs wait, the removed nodes a what-if session would place
// them on come back after a boot delay. Every eviction throws away the work since the
// job's last checkpoint, and jobs without checkpoints are protected from eviction.
// RunAutoscaled compares each scheduler with the autoscalers its users pair it with
// and with the always-on cluster, in GPU-node-hours, lost work and waits, against the
// ceiling of a re-packer free to move every pod; with EveryAutoscaler each scheduler
// runs under every autoscaler, to tell their parts apart.
//
// A replay with RightSizing runs one GPU right-sizing arm: every job carries GPU memory
// and utilisation curves of real pods (package curves), jobs of one GPU ask for a whole
// GPU, a user's slice, the recommender's (package rightsize, fed only with finished
// runs) or their true peak; a run whose memory passes its slice fails and restarts with
// a larger one, and with idle reclaim an idle run is suspended until its curve turns
// busy. The burstable arm asks a request and a limit: the scheduler packs on requests,
// runs use free memory up to their limits, and GPU-memory pressure evicts the run
// furthest above its request (burstable.go).
//
// Inputs come from package trace and results go to package report.
package sim
