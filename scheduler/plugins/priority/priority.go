package priority

import (
	"cmp"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "priority"

// Priority is the ordering plugin.
type Priority struct{}

var (
	_ framework.JobOrder    = Priority{}
	_ framework.VictimOrder = Priority{}
)

// Name implements framework.Plugin.
func (Priority) Name() string { return Name }

// CompareJobs implements framework.JobOrder.
func (Priority) CompareJobs(a, b *framework.Job) int {
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return cmp.Compare(a.Key(), b.Key())
}

// CompareVictims implements framework.VictimOrder.
func (Priority) CompareVictims(a, b *framework.Job) int {
	if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
		return c
	}
	// Youngest first: the least work is lost.
	if c := b.StartedAt().Compare(a.StartedAt()); c != 0 {
		return c
	}
	return cmp.Compare(a.Key(), b.Key())
}
