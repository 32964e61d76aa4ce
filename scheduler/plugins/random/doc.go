// Package random is the random-fit baseline: every feasible node scores the same, so the
// session's random tie-break picks a uniformly random one; a share goes to a random GPU
// it fits, as the FGD paper's simulator ran this baseline.
package random
