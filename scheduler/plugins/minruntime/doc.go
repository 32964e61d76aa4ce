// Package minruntime protects jobs from eviction until they ran for their minRuntime
// (or the configured default), at most their queue's MaxMinRuntime, so preemption
// cannot thrash.
package minruntime
