package report

import (
	"encoding/json"
	"io"
	"maps"
)

// document is the --format json output.
type document struct {
	Results []Result  `json:"results"`
	Summary []Summary `json:"summary"`
}

// WriteJSON writes {"results":[...],"summary":[...]} (indented, one trailing newline).
// Each result has policy, seed, trace, alloc_pct_at ("50", "90", "100", "130"),
// unallocated_pct_at_100, frag_pct_at_90, wall_seconds and, for replay runs, replay;
// each summary has policy, trace, runs, mean_unallocated_pct_at_100,
// stddev_unallocated_pct_at_100 and the other aggregates. summaries may be nil, then
// they are computed from results. Empty lists are written as [], missing maps as {}.
func WriteJSON(w io.Writer, results []Result, summaries []Summary) error {
	if summaries == nil {
		summaries = Summarize(results)
	}
	doc := document{Results: make([]Result, len(results)), Summary: make([]Summary, len(summaries))}
	for i, r := range results {
		if r.AllocPctAt == nil {
			r.AllocPctAt = map[string]float64{}
		}
		doc.Results[i] = r
	}
	for i, s := range summaries {
		s.MeanAllocPctAt = maps.Clone(s.MeanAllocPctAt)
		if s.MeanAllocPctAt == nil {
			s.MeanAllocPctAt = map[string]float64{}
		}
		doc.Summary[i] = s
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
