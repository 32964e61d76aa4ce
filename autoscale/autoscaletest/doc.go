// Package autoscaletest holds what the tests of the autoscale packages share: an event
// recorder that keeps what the autoscaler's event sink writes, and Expect, which checks
// one planning decision.
package autoscaletest
