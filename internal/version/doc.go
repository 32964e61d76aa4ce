// Package version carries the build's version, set with -ldflags at build time.
package version
