package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/test/e2e"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// leaseDuration is the scheduler's and the autoscaler's Lease here (15s by default).
const leaseDuration = 6 * time.Second

// ciSeeds is the CI schedule: one seed visits every fault point.
const ciSeeds = "1"

// overlay is the example GitOps repository as the fault runs use it: queues sized for
// 2-4 nodes of 8 GPUs, nodes removed 10 seconds after their last GPU pod.
const overlay = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../example
patches:
  - target: {kind: Queue, name: train-prod}
    patch: |
      - {op: replace, path: /spec/deserved/tessera.dev~1gpu, value: "32"}
      - {op: replace, path: /spec/capability/tessera.dev~1gpu, value: "64"}
  - target: {kind: Queue, name: train-dev}
    patch: |
      - {op: replace, path: /spec/deserved/tessera.dev~1gpu, value: "32"}
      - {op: replace, path: /spec/capability/tessera.dev~1gpu, value: "64"}
  - target: {kind: ScaleDownPolicy, name: idle-gpu-nodes}
    patch: |
      - {op: replace, path: /spec/idleAfter, value: 10s}
      - {op: replace, path: /spec/cooldown, value: 0s}
      - {op: replace, path: /spec/maxParallel, value: 2}
      - {op: replace, path: /spec/underusedGPUPercent, value: 0}
  - target: {kind: Namespace}
    patch: |
      - {op: add, path: /metadata/annotations/tessera.dev~1rewrite-nvidia-gpu, value: "true"}
`

// TestFaults runs the fault schedules of $FAULT_SEEDS (default: the CI schedule) against
// the end-to-end cluster and fails on any invariant violated or, for the CI schedule,
// any fault point not reached.
func TestFaults(t *testing.T) {
	if os.Getenv("TESSERA_FAULTS") != "1" {
		t.Skip("set TESSERA_FAULTS=1 (make faults) to inject faults")
	}
	spec := os.Getenv("FAULT_SEEDS")
	if spec == "" {
		spec = ciSeeds
	}
	seeds, err := ParseSeeds(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testenv.Context(t, time.Duration(len(seeds))*25*time.Minute+10*time.Minute)
	began := time.Now()
	logf := func(format string, args ...any) {
		fmt.Printf("%7.1fs  %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	config, err := schedulerConfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := e2e.Start(ctx, e2e.Options{Nodes: maxNodes, MinNodes: 2, Logf: logf, Faults: true, Replicas: 2,
		LeaseDuration: leaseDuration, SchedulerConfig: config})
	t.Cleanup(func() {
		if c != nil {
			if t.Failed() {
				t.Logf("components' logs:\n%s", c.Logs(40))
			}
			c.Stop()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SyncExample(ctx, overlay); err != nil {
		t.Fatal(err)
	}
	// The driver stops (its process supervision first) before the cluster does.
	dctx, stopDriver := context.WithCancel(ctx)
	t.Cleanup(stopDriver)
	d, err := NewDriver(dctx, c, logf)
	if err != nil {
		t.Fatal(err)
	}
	if only := os.Getenv("FAULT_POINTS"); only != "" {
		if d.Only, err = ParsePoints(only); err != nil {
			t.Fatal(err)
		}
	}
	var results []Result
	for _, seed := range seeds {
		logf("== seed %d (replay: %s)", seed, Replay(seed))
		results = append(results, d.RunSeed(ctx, seed)...)
		if out := os.Getenv("FAULT_REPORT"); out != "" {
			// The table so far, after every seed: a long schedule stopped early keeps it.
			var table strings.Builder
			Table(&table, results, leaseDuration)
			_ = os.WriteFile(out, []byte(fmt.Sprintf("seeds run: up to %d of %s, %s\n\n%s", seed, spec, time.Since(began).Round(time.Second), table.String())), 0o644)
		}
	}
	var table strings.Builder
	_, _, violations := Table(&table, results, leaseDuration)
	fmt.Printf("\nFault points x faults injected x violations x recovery (seeds %s, %s):\n\n%s", spec, time.Since(began).Round(time.Second), table.String())
	for _, r := range results {
		for _, v := range r.Violations {
			t.Errorf("seed %d step %d (%s): %s; replay: %s", r.Seed, r.Step, r.Fault, v, Replay(r.Seed))
		}
	}
	if violations == 0 && spec == ciSeeds && len(d.Only) == 0 {
		if missed := Missed(results); len(missed) > 0 {
			t.Errorf("fault points not reached by the CI schedule: %v", missed)
		}
	}
}

// schedulerConfig writes the scheduler's default profile with its waits shortened to
// this run's scale: reclaim after 10s, nodes reserved for a gang that waited 15s.
func schedulerConfig(dir string) (string, error) {
	cfg, err := scheduler.Profile("tessera")
	if err != nil {
		return "", err
	}
	cfg.ReclaimAfter = scheduler.Duration{Duration: 10 * time.Second}
	cfg.ReservationAfter = scheduler.Duration{Duration: 15 * time.Second}
	cfg.ReservationDeadline = scheduler.Duration{Duration: 45 * time.Second}
	cfg.ReservationDrain = scheduler.Duration{Duration: 10 * time.Second}
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "scheduler.json")
	return path, os.WriteFile(path, b, 0o644)
}
