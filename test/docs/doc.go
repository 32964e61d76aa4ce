// Package docs runs the commands of the task pages under docs/: every shell block
// marked runnable (a line "<!-- runnable -->" right before its ```sh fence, found by
// internal/doctest) runs with bash, in page order, in a temporary directory whose PATH
// starts with a freshly built tessera binary, so a page's commands, flags and file
// names cannot drift from the code. Blocks marked "<!-- runnable: cluster -->" need a
// live cluster and run in test/e2e instead. The package holds tests only.
package docs
