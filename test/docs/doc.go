// Package docs runs the commands of the task pages under docs/: every shell block
// marked runnable (a line "<!-- runnable -->" right before its ```sh fence, found by
// internal/doctest) runs with bash, in page order, in a temporary directory whose PATH
// starts with a freshly built tessera binary, so a page's commands, flags and file
// names cannot drift from the code. An output block after a runnable one (marked
// "<!-- output -->", or "<!-- output: COMMAND -->" for output of a command the page does
// not show) is compared with what the command printed. Blocks marked "<!-- runnable:
// cluster -->" need a live cluster and run in test/e2e instead; what the pages quote of
// their output is checked against the code and configuration that print it
// (claims_test.go). Figures quoted in several places are checked against the one run
// that measured them (figures_test.go). The package holds tests only.
package docs
