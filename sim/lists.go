package sim

import (
	"encoding/csv"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tessera-gpu/tessera/sim/report"
	"github.com/tessera-gpu/tessera/sim/traces"
)

// PublishedArrive is the arrived GPU request, as a multiple of the cluster's GPUs, of
// the fill-up runs whose figures the FGD paper's simulator published.
const PublishedArrive = 1.3

// runLists runs the options once per pod list of a comma-separated Trace ("default,
// cpu050"), one list after the other, and returns every list's results in the order
// the lists are given. Every name is checked before the first run.
func runLists(o Options, lists []string) ([]report.Result, error) {
	known := OpenbVariants()
	for i, l := range lists {
		l = strings.TrimSpace(l)
		switch {
		case l == "":
			return nil, fmt.Errorf("--trace %q: an empty pod list name; separate names with single commas", o.Trace)
		case !slices.Contains(known, l):
			return nil, fmt.Errorf("--trace: unknown openb pod list %q; shipped and built: %s", l, strings.Join(known, ", "))
		case slices.Contains(lists[:i], l):
			return nil, fmt.Errorf("--trace: %s is named twice; each pod list runs once", l)
		}
		lists[i] = l
	}
	var all []report.Result
	for i, l := range lists {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "openb-%s (%d of %d)\n", l, i+1, len(lists))
		}
		one := o
		one.Trace = l
		rs, err := Run(one)
		if err != nil {
			return nil, err
		}
		all = append(all, rs...)
	}
	return all, nil
}

// addPublished gives the fill-up results of a shipped openb pod list the figure the
// FGD paper's simulator published for the same list and policy, when there is one and
// the runs follow its protocol's arrivals (PublishedArrive).
func addPublished(o Options, results []report.Result) {
	if o.Trace == "" || o.Mode == ModeReplay || o.Arrive != PublishedArrive {
		return
	}
	for i := range results {
		r := &results[i]
		if r.Replay != nil {
			continue
		}
		if v, ok := PublishedUnallocated(o.Trace, r.Policy); ok {
			r.PublishedUnallocatedPctAt100 = &v
		}
	}
}

// PublishedUnallocated is the % of GPUs unallocated at 100% arrived that the FGD
// paper's simulator published for an openb pod list ("default") and one of its
// policies ("fgd"), mean of seeds 42-51; false when it published none.
func PublishedUnallocated(list, policy string) (float64, bool) {
	v, ok := publishedFGD()[[2]string{list, policy}]
	return v, ok
}

// publishedFGD reads traces.PublishedFGD once: unallocated_pct_at_100 by (workload,
// policy). The file ships in the binary and its test reads it, so an error is a bug.
var publishedFGD = sync.OnceValue(func() map[[2]string]float64 {
	f, err := traces.Open(traces.PublishedFGD)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		panic(fmt.Errorf("%s: %w", traces.PublishedFGD, err))
	}
	if len(rows) == 0 || !slices.Equal(rows[0][:3], []string{"workload", "policy", "unallocated_pct_at_100"}) {
		panic(fmt.Errorf("%s: want the columns workload, policy, unallocated_pct_at_100 first", traces.PublishedFGD))
	}
	out := map[[2]string]float64{}
	for _, r := range rows[1:] {
		v, err := strconv.ParseFloat(r[2], 64)
		if err != nil {
			panic(fmt.Errorf("%s: %s %s: %w", traces.PublishedFGD, r[0], r[1], err))
		}
		out[[2]string{r[0], r[1]}] = v
	}
	return out
})
