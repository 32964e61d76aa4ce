// Package gang makes jobs all-or-nothing: a job binds only when at least minMember of
// its tasks fit in the same session.
package gang
