// Package report turns simulation results into what `tessera simulate` prints and
// writes: a terminal table, the same tables as markdown (--format markdown), the
// --format json document and a self-contained HTML report, plus a progress bar for
// stderr. It imports nothing of the scheduler; the simulator fills in Result values
// and hands them over.
//
// Summarize groups runs by (policy, trace), in first-seen order, with means and
// sample standard deviations across seeds. WriteTable, WriteMarkdown, WriteJSON and
// WriteHTML take the results and their summaries (nil summaries are computed). The
// HTML page has no scripts and loads nothing: CSS and SVG charts are inline.
package report
