package faults

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Table writes the fault points × faults injected × violations × recovery table and
// the summary line "N faults injected at M fault points, V violations".
func Table(w io.Writer, results []Result, lease time.Duration) (injected, points, violations int) {
	type row struct {
		steps, reached, injected, violations int
		recoveries, lasted                   []time.Duration
		unrecovered                          int
	}
	rows := map[string]*row{}
	for _, r := range results {
		if r.Fault.Point == endOfSchedule {
			violations += len(r.Violations)
			continue
		}
		x := rows[r.Fault.Point]
		if x == nil {
			x = &row{}
			rows[r.Fault.Point] = x
		}
		x.steps++
		x.violations += len(r.Violations)
		violations += len(r.Violations)
		if !r.Reached {
			continue
		}
		x.reached++
		x.injected += r.Injected
		injected += r.Injected
		x.lasted = append(x.lasted, r.Lasted)
		if r.Recovered {
			x.recoveries = append(x.recoveries, r.Recovery)
		} else {
			x.unrecovered++
		}
	}
	var all []time.Duration
	fmt.Fprintf(w, "| fault point | scheduled | reached | faults injected | violations | fault lasted (max) | recovery p50 | recovery p99 | max | not recovered |\n")
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range Points() {
		x := rows[p]
		if x == nil {
			continue
		}
		if x.reached > 0 {
			points++
		}
		all = append(all, x.recoveries...)
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %s | %s | %s | %s | %d |\n", p, x.steps, x.reached, x.injected, x.violations,
			quantile(x.lasted, 1), quantile(x.recoveries, 0.5), quantile(x.recoveries, 0.99), quantile(x.recoveries, 1), x.unrecovered)
	}
	fmt.Fprintf(w, "| all | | | %d | %d | | %s | %s | %s | |\n", injected, violations, quantile(all, 0.5), quantile(all, 0.99), quantile(all, 1))
	fmt.Fprintf(w, "\nA fault lasts from its first injection to its end: its last error, the end of its delay, the killed process serving (API server, etcd) or started again; a leader's kill ends at once.\n")
	fmt.Fprintf(w, "Recovery: from the fault's end to the next pod bound (the next scale-down step for the autoscaler's points, a new leader for its leader's kill); bound 2 lease durations = %s.\n", 2*lease)
	fmt.Fprintf(w, "%d faults injected at %d fault points, %d violations\n", injected, points, violations)
	return injected, points, violations
}

// quantile is the q-quantile of ds (nearest rank), "-" for none.
func quantile(ds []time.Duration, q float64) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	i = min(max(i, 0), len(s)-1)
	return s[i].Round(100 * time.Millisecond).String()
}

// Missed lists the catalog's points no step reached.
func Missed(results []Result) []string {
	reached := map[string]bool{}
	for _, r := range results {
		reached[r.Fault.Point] = reached[r.Fault.Point] || r.Reached
	}
	var out []string
	for _, p := range Points() {
		if !reached[p] {
			out = append(out, p)
		}
	}
	return out
}

// Replay is the command that runs seed's schedule again.
func Replay(seed uint64) string { return fmt.Sprintf("FAULT_SEEDS=%d make faults", seed) }

// ParseSeeds reads "1", "1,4,9" or "1-25".
func ParseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		var a, b uint64
		if lo, hi, ok := strings.Cut(part, "-"); ok {
			if _, err := fmt.Sscan(lo, &a); err != nil {
				return nil, fmt.Errorf("FAULT_SEEDS: %q is not a range like 1-25", part)
			}
			if _, err := fmt.Sscan(hi, &b); err != nil || b < a {
				return nil, fmt.Errorf("FAULT_SEEDS: %q is not a range like 1-25", part)
			}
		} else if _, err := fmt.Sscan(part, &a); err != nil {
			return nil, fmt.Errorf("FAULT_SEEDS: %q is not a seed number", part)
		} else {
			b = a
		}
		for s := a; s <= b; s++ {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("FAULT_SEEDS is empty: give seeds like 1, 1,4,9 or 1-25")
	}
	return out, nil
}
