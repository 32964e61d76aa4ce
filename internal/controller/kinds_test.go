package controller

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
)

// TestFaultSeed4KindsWatch (found by make faults, seed 4: a scheduler started while the
// API server restarted watched no JobSets for its whole life): the watch ends its
// manager once discovery serves other kinds than at start, and runs on while they are
// the same.
func TestFaultSeed4KindsWatch(t *testing.T) {
	calls := 0
	k := KindsWatch{Every: time.Millisecond, AtStart: "JobSet,RayCluster", Log: logr.Discard(),
		Mapper: func() (apimeta.RESTMapper, error) { return nil, nil },
		Kinds: func(apimeta.RESTMapper) string {
			calls++
			if calls < 3 {
				return "JobSet,RayCluster"
			}
			return "JobSet,LeaderWorkerSet,RayCluster"
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.Start(ctx); err == nil || ctx.Err() != nil || calls != 4 {
		t.Fatalf("Start returned %v after %d looks; want an error at the fourth (the second showing the change)", err, calls)
	}
	// A kind missing from one look only (a discovery error) changes nothing.
	flaky := 0
	k.Kinds = func(apimeta.RESTMapper) string {
		if flaky++; flaky%2 == 0 {
			return "RayCluster"
		}
		return "JobSet,RayCluster"
	}
	short, stop := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer stop()
	if err := k.Start(short); err != nil {
		t.Fatalf("unchanged kinds ended the watch: %v", err)
	}
}
