package testutil

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler"
)

// Scheduler builds a scheduler running the named profile ("tessera", "kube-default" ...).
func Scheduler(t testing.TB, profile string) *scheduler.Scheduler {
	t.Helper()
	cfg, err := scheduler.Profile(profile)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
