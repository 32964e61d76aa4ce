// Package rightsize recommends GPU-memory requests from observed use, the way the
// Vertical Pod Autoscaler recommends CPU and memory: each finished run of a workload
// adds its peak GPU memory to a histogram whose weights decay with age; the
// recommendation is a high percentile of it plus a safety margin, rounded up, floored,
// and given only when it is a real slice of the GPU and enough runs were seen. A run
// that ran out of GPU memory bumps the next run's slice; repeated out-of-memory runs,
// and frameworks that preallocate the whole GPU, get no recommendation, so the user's
// own request stands. RecommendBurstable gives a request and a limit instead, as VPA's
// target and upper bound, from the first run (the limit the user's request, the request
// a prior's: the workload's class, image or namespace), live runs' peaks included;
// PressurePercent is the GPU-memory pressure threshold above which a pod using more
// than its request is evicted. The package is pure: the node agent, the recommender controller,
// admission and the simulator all use it.
package rightsize
