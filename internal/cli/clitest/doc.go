// Package clitest runs a command tree in a test as a user runs the binary, and renders
// its command reference page.
package clitest
