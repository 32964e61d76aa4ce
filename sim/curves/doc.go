// Package curves holds per-pod GPU-memory and GPU-utilisation curves of a production
// GPU cluster (the genai2026 series: Alibaba clusterdata cluster-trace-v2026-GenAI,
// about 143 pods sampled every 57 s for 23 hours), reduced to one value per ten
// minutes, for the simulator's right-sizing and idle-reclaim arms. The table ships
// embedded (genai2026.txt); gen/ derives it from the two archives, and a test checks
// that it matches them.
package curves
