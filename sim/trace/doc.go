// Package trace reads and generates the simulator's inputs; it imports no scheduler
// package (only the shipped trace files of package traces).
//
// Three kinds of input:
//
//   - The Alibaba openb trace (cluster-trace-gpu-v2023, shipped in
//     sim/traces/openb): ReadNodesCSV and ReadPodsCSV read its node and pod
//     lists into NodeSpec and PodSpec. Reading is header-driven (column order is free;
//     openb_pod_list_multigpu20.csv has only name, cpu_milli, memory_mib, num_gpu,
//     gpu_milli) and strict: every malformed row fails with "file:line: column X:
//     reason", never a silent skip.
//   - YAML manifests of a user's own cluster: ReadManifests decodes one or more files
//     (or directories of them) of Node, Namespace and Pod (v1), Job, PriorityClass,
//     Queue, PodGroup and AdmissionPolicy documents, and v1 Lists of them, strictly,
//     refusing what the API server refuses of the fields the simulator reads; Volcano's
//     objects and batch Jobs scheduled by Volcano become what tessera convert volcano
//     makes of them.
//   - Built-in scenarios: BuildScenario("operator", seed) and BuildScenario("diurnal",
//     seed) generate a cluster, its queues and a seeded job mix (see Scenario).
//
// # GPU models and gpu_milli
//
// In the trace, gpu_milli is a share of one GPU in thousandths, not memory. The
// simulator maps a share to GPU memory through the model's memory (MilliToMiB,
// PodSpec.GPUMemoryMiBOn), rounding up. The model table (GPUModelMemoryMiB), in MiB
// per GPU:
//
//	T4 15109, V100M16 16160, P100 16280, A10 22731, V100M32 32510, A100 81251,
//	G1 10000, G2 20000, G3 30000            the FGD paper simulator's values for openb
//	                                        (G1-G3 are undisclosed models, placeholders)
//	A100-80GB 81920, A100-40GB 40960, H100-80GB 81559, H200 143771, L40S 46068
//	                                        for user scenarios
//
// # Fill-up protocol
//
// FillUp tunes a pod list to a multiple of the cluster's GPU capacity as the FGD
// paper's simulator does (shuffle the list, then append seeded draws with replacement
// until the next would overshoot, or remove random pods when the list asks for too
// much), drawing from math/rand's source in that simulator's order, so a seed gives its
// arrivals; TypicalShapes gives the paper's "typical pods" (the shapes covering 95% of
// the workload) that fragmentation is measured against. Other randomness comes from
// math/rand/v2's PCG (NewRand); every result is a pure function of its seed.
//
// # The "operator" scenario
//
// Modelled on an operator's report: 10 nodes of 8 A100-80GB (racks r0 = a100-00..04 and
// r1 = a100-05..09 in tessera.dev/rack, zone z0), queues train-prod (weight 2) and
// train-dev (weight 1) with the report's deserved / capability figures (15/20 and
// 5/10 GPUs of a 20-GPU cluster) scaled x4 to the 80 GPUs: 60/80 and 20/40. Over 24
// virtual hours, with a backlog waiting at time 0:
//
//   - pretrain: 4 pods x 8 GPUs gangs, 2-6 h, train-prod, priority 1000; one at a
//     random time of the day, plus one waiting at 0;
//   - finetune: 1 or 2 pods x 8 GPUs (all-or-nothing), 1-3 h, 60% train-prod /
//     40% train-dev, priority 500; Poisson, 0.8 an hour on average;
//   - experiment: one pod (a notebook or a small training run) with a 10-40 GiB
//     slice of one GPU, 1-3 h, 55% train-dev / 45% train-prod, priority 100;
//     Poisson, 60 an hour on average, 60 waiting at 0. They are most of the pods:
//     whole GPUs for them are where a scheduler without GPU sharing loses.
//
// Two rules set the mix. Each queue's demand at the day's peak fits its capability:
// a team whose steady demand exceeds its cap starves under any scheduler that
// enforces quotas, which would test the configuration, not the scheduler (train-dev's
// peak is 39 of its 40 GPUs). And the experiment rate puts the default scheduler's
// strategy near the report's 43% GPU utilisation (46%, seeds 42-61).
//
// Poisson rates follow a daily cycle (x0.6 at midnight, x1.4 at noon), so demand
// exceeds the cluster at peaks and falls below it at night.
//
// # The "diurnal" scenario
//
// A week of openb pods for autoscaling: 8 nodes like the trace's most common GPU node
// (96 CPUs, 384 GiB, 8 G2 GPUs), no queues, one pod per job, its shape and lifetime
// drawn together from the default list's GPU pods that have creation and deletion
// times, live at most a day and fit the node. Arrivals are Poisson, rate(t) = mean x
// (1 - swing x cos(2 pi t / day + lag)), with mean, swing and lag derived from the pool
// (newDiurnalCycle) so that GPU demand averages 60% of the GPUs and swings between
// DiurnalTrough (30%) at midnight and DiurnalPeak (90%) at noon: the pods' lifetimes
// smooth the cycle by |H| and delay it by the lag, H being the Fourier transform at one
// cycle a day of the GPU-weighted share of pods still running s seconds after arrival,
// and the swing and lag make up for both. Arrivals start a day early, and pods still
// running at 0 start there with the rest of their run. HourlyDemand measures the
// result (seeds 42-44: 0.89-0.95 around noon, 0.30-0.32 around midnight).
package trace
