// Package minruntime protects jobs from eviction until they ran for their minRuntime
// (or the configured default), so preemption cannot thrash.
package minruntime
