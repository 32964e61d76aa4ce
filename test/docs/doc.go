// Package docs runs the commands of the task pages under docs/: every shell block
// marked runnable (a line "<!-- runnable -->" right before its ```sh fence) runs with
// bash, in page order, in a temporary directory whose PATH starts with a freshly built
// tessera binary, so a page's commands, flags and file names cannot drift from the
// code. The package holds tests only.
package docs
