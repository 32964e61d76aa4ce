// Package random is the random-fit baseline: every feasible node scores the same, so the
// session's random tie-break picks a uniformly random one; shares go to the best-fitting GPU.
package random
