// Package recommender keeps each workload's GPUProfile: when a pod that held
// Tessera-assigned GPUs ends, it takes the pod's peak GPU memory from the node agent's
// GPUNode status (status.pods), tells an out-of-memory failure from the containers'
// termination messages, records the run into the GPUProfile of the pod's workload
// (rightsize.WorkloadKey) and writes the recommendation for its next run
// (rightsize.Profile.Recommend). Each pod is recorded once, across restarts: the
// profile remembers the last pods it recorded. It runs in `tessera autoscaler`.
package recommender
