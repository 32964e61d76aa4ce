package scheduler_test

import (
	corev1 "k8s.io/api/core/v1"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const volcanoConfig = `
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: minruntime
    arguments:
      minruntime.default: 10m
- plugins:
  - name: proportion
  - name: predicates
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 2
      binpack.memory: 1
      binpack.resources: tessera.dev/gpu, example.com/fpga
      binpack.resources.tessera.dev/gpu: 5
      binpack.resources.example.com/fpga: 3
  - name: topology
    weight: 2
percentageOfNodesToScore: 50
reservationAfter: 45m
seed: 7
`

func TestLoadConfigVolcanoShape(t *testing.T) {
	cfg, err := scheduler.LoadConfig(writeConfig(t, volcanoConfig))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Actions != scheduler.DefaultActions || len(cfg.Tiers) != 2 || len(cfg.Tiers[1].Plugins) != 4 {
		t.Fatalf("parsed %+v", cfg)
	}
	bp := cfg.Tiers[1].Plugins[2]
	if bp.Name != "binpack" || len(bp.Arguments) != 6 || cfg.Tiers[1].Plugins[3].Weight != 2 {
		t.Fatalf("plugins %+v", cfg.Tiers[1].Plugins)
	}
	if cfg.PercentageOfNodesToScore != 50 || cfg.ReservationAfter.Duration != 45*time.Minute || cfg.Seed != 7 {
		t.Fatalf("options %+v", cfg)
	}
	if _, err := scheduler.New(cfg); err != nil {
		t.Fatal(err)
	}
}

// defaultActionsQuoted is how errors suggest the default actions.
var defaultActionsQuoted = strconv.Quote(scheduler.DefaultActions)

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown plugin", "tiers:\n- plugins: [{name: priority}]\n- plugins: [{name: binpak}]\n",
			[]string{"tiers[1].plugins[0].name", `unknown plugin "binpak"`, "binpack"}},
		{"unknown action", "actions: \"enqueue, allocat\"\n",
			[]string{"actions", `unknown action "allocat"`, "allocate"}},
		{"unknown binpack argument", "tiers:\n- plugins:\n  - name: binpack\n    arguments: {binpack.cpus: 2}\n",
			[]string{"tiers[0].plugins[0].arguments", "binpack.cpus", "binpack.cpu"}},
		{"binpack resource weight not listed", "tiers:\n- plugins:\n  - name: binpack\n    arguments: {binpack.resources: tessera.dev/gpu, binpack.resources.example.com/fpga: 2}\n",
			[]string{"tiers[0].plugins[0].arguments", "example.com/fpga is not listed in binpack.resources"}},
		{"binpack weight not a number", "tiers:\n- plugins:\n  - name: binpack\n    arguments: {binpack.weight: heavy}\n",
			[]string{"binpack.weight", `"heavy" is not a non-negative number`}},
		{"minruntime argument", "tiers:\n- plugins:\n  - name: minruntime\n    arguments: {minruntime.defualt: 5m}\n",
			[]string{"tiers[0].plugins[0].arguments", "unknown argument minruntime.defualt", "minruntime.default"}},
		{"minruntime duration", "tiers:\n- plugins:\n  - name: minruntime\n    arguments: {minruntime.default: soon}\n",
			[]string{"minruntime.default", `"soon" is not a duration`}},
		{"plugin without arguments", "tiers:\n- plugins:\n  - name: gang\n    arguments: {gang.size: 2}\n",
			[]string{"tiers[0].plugins[0].arguments", "takes no arguments"}},
		{"negative weight", "tiers:\n- plugins:\n  - {name: binpack, weight: -1}\n",
			[]string{"tiers[0].plugins[0].weight", "negative"}},
		{"unknown field", "tiers:\n- plugin: [{name: gang}]\n",
			[]string{`unknown field "plugin"`}},
		{"bad duration", "reservationAfter: later\n",
			[]string{`"later" is not a duration`}},
		{"negative reclaim wait", "reclaimAfter: -5m\ntiers:\n- plugins: [{name: gang}]\n",
			[]string{"reclaimAfter: -5m0s is negative"}},
		{"deadline before reservation", "reservationAfter: 6h\nreservationDeadline: 2h\ntiers:\n- plugins: [{name: gang}]\n",
			[]string{"reservationDeadline: 2h0m0s", "below reservationAfter (6h0m0s)"}},
		{"drain beyond deadline", "reservationAfter: 1h\nreservationDeadline: 2h\nreservationDrain: 3h\ntiers:\n- plugins: [{name: gang}]\n",
			[]string{"reservationDrain: 3h0m0s", "outside 0..reservationDeadline (2h0m0s)"}},
		{"percentage out of range", "percentageOfNodesToScore: 150\n",
			[]string{"percentageOfNodesToScore", "outside 0..100"}},
		{"empty file", "# nothing yet\n", []string{"empty configuration"}},
		{"empty actions", "actions: \"\"\ntiers:\n- plugins: [{name: gang}]\n",
			[]string{"actions: empty", defaultActionsQuoted}},
		{"only commas in actions", "actions: \", ,\"\ntiers:\n- plugins: [{name: gang}]\n", []string{"actions: empty"}},
		{"no plugins", "actions: allocate\n", []string{"tiers: no plugin enabled"}},
		{"empty tier", "tiers:\n- plugins: [{name: gang}]\n- plugins: []\n", []string{"tiers[1].plugins: empty"}},
		{"duplicated plugin", "tiers:\n- plugins: [{name: gang}]\n- plugins: [{name: predicates}, {name: gang}]\n",
			[]string{"tiers[1].plugins[1].name", `plugin "gang" is already enabled at tiers[0].plugins[0]`}},
		{"duplicated field", "actions: allocate\nactions: enqueue\ntiers:\n- plugins: [{name: gang}]\n", []string{`"actions" already set`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeConfig(t, tc.yaml)
			_, err := scheduler.LoadConfig(p)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, p) {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "JSON") {
				t.Fatalf("error %q speaks of JSON; the file is YAML", err)
			}
		})
	}
	if _, err := scheduler.LoadConfig(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("missing file loaded")
	}
}

func TestProfiles(t *testing.T) {
	names := scheduler.ProfileNames()
	if names[0] != "tessera" || len(names) != 11 {
		t.Fatalf("profiles %v", names)
	}
	for _, name := range names {
		if scheduler.ProfileDescription(name) == "" {
			t.Errorf("%s: no description", name)
		}
		cfg, err := scheduler.Profile(name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := scheduler.New(cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Every profile schedules, with or without an enqueue action.
		j := testutil.MakeJob("j").GPU(1).Obj()
		if r := s.RunSession(testutil.Snapshot(0, nodes(1, 8), []*framework.Job{j})); boundTasks(r, j) != 1 {
			t.Fatalf("%s: job not placed: %v", name, j.Pending)
		}
	}
	if _, err := scheduler.Profile("slurm"); err == nil || !strings.Contains(err.Error(), "known: tessera, volcano, volcano-seed, volcano-capacity, kube-default") {
		t.Fatalf("unknown profile: %v", err)
	}
}

// TestBinpackWeightArgument: binpack.weight scales binpack against the other scorers,
// as in Volcano; weight 0 leaves only the spreading scorer.
func TestBinpackWeightArgument(t *testing.T) {
	place := func(binpackWeight string) string {
		yaml := "actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n  - name: leastallocated\n  - name: binpack\n    arguments: {binpack.weight: " + binpackWeight + "}\n"
		cfg, err := scheduler.LoadConfig(writeConfig(t, yaml))
		if err != nil {
			t.Fatal(err)
		}
		s, err := scheduler.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ns := nodes(2, 8)
		busy := testutil.MakeJob("busy").GPU(4).Obj()
		testutil.Run(busy, testutil.Epoch, ns[1])
		j := testutil.MakeJob("j").GPU(1).Obj()
		s.RunSession(testutil.Snapshot(0, ns, []*framework.Job{busy, j}))
		if j.Tasks[0].Node == nil {
			t.Fatalf("binpack.weight %s: not placed: %v", binpackWeight, j.Pending)
		}
		return j.Tasks[0].Node.Name
	}
	if got := place("0"); got != "na" {
		t.Fatalf("binpack.weight 0 still packed onto %s", got)
	}
	if got := place("1"); got != "nb" {
		t.Fatalf("binpack.weight 1 spread onto %s", got)
	}
}

// The tessera profile keeps new work off a node the autoscaler tainted as a scale-down
// candidate (PreferNoSchedule) even where packing prefers it, and still uses it when no
// other node fits.
func TestTesseraAvoidsScaleDownCandidates(t *testing.T) {
	cfg, err := scheduler.Profile("tessera")
	if err != nil {
		t.Fatal(err)
	}
	place := func(otherBusy, want int) string {
		s, err := scheduler.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ns := nodes(2, 8)
		ns[0].Taints = []corev1.Taint{{Key: "tessera.dev/scale-down-candidate", Effect: corev1.TaintEffectPreferNoSchedule}}
		jobs := []*framework.Job{testutil.MakeJob("a").GPU(4).Obj()}
		testutil.Run(jobs[0], testutil.Epoch, ns[0])
		if otherBusy > 0 {
			jobs = append(jobs, testutil.MakeJob("b").GPU(otherBusy).Obj())
			testutil.Run(jobs[1], testutil.Epoch, ns[1])
		}
		j := testutil.MakeJob("j").GPU(want).Obj()
		s.RunSession(testutil.Snapshot(0, ns, append(jobs, j)))
		if j.Tasks[0].Node == nil {
			t.Fatalf("%d GPUs with %d busy on nb: not placed: %v", want, otherBusy, j.Pending)
		}
		return j.Tasks[0].Node.Name
	}
	if got := place(0, 2); got != "nb" {
		t.Errorf("2 GPUs went to %s, want nb: na is a scale-down candidate", got)
	}
	if got := place(6, 4); got != "na" {
		t.Errorf("4 GPUs went to %s, want na, the only node with 4 free", got)
	}
}
