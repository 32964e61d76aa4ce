// Package clitest runs a command tree in a test as a user runs the binary.
package clitest
