package testutil

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler"
)

// Scheduler builds a scheduler running the named policy ("tessera", "kube-default" ...).
func Scheduler(t testing.TB, policy string) *scheduler.Scheduler {
	t.Helper()
	cfg, err := scheduler.Policy(policy)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
