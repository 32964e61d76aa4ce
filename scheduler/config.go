package scheduler

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/internal/yamlerr"
)

// Config is the scheduler configuration, shaped like Volcano's so its users recognise it:
//
//	actions: "enqueue, allocate, preempt, reclaim, backfill"
//	tiers:
//	- plugins: [{name: priority}, {name: gang}]
//	- plugins:
//	  - name: binpack
//	    arguments: {binpack.weight: 10, binpack.resources: tessera.dev/gpu, binpack.resources.tessera.dev/gpu: 5}
type Config struct {
	// Actions names the actions each session runs, in order, separated by commas;
	// left out, DefaultActions.
	Actions string `json:"actions"`
	// Tiers are the enabled plugins, in groups read in order.
	Tiers []Tier `json:"tiers"`
	// PercentageOfNodesToScore bounds the feasible nodes scored per task; 0 is adaptive
	// (as kube-scheduler), 100 scores every node.
	PercentageOfNodesToScore int `json:"percentageOfNodesToScore,omitempty"`
	// ReservationAfter is how long a gang waits before backfill reserves nodes for it.
	// Work whose runtime estimate (Job.ExpectedRuntime, else its class's history) has
	// it end before the gang is expected to start (when the work on the reserved nodes
	// is expected to end, or the deadline) runs on them too: EASY backfill.
	ReservationAfter Duration `json:"reservationAfter,omitzero"`
	// ReservationDeadline, when set, is the wait by which a gang holding a reservation
	// starts. Work that yields to the gang (of lower priority, or of its priority and
	// submitted after it) may still run on its reserved nodes until ReservationDeadline
	// minus ReservationDrain; then the nodes take no new work, and at the deadline such
	// work still on them is preempted. 0 never preempts: reserved nodes keep out all
	// other work.
	ReservationDeadline Duration `json:"reservationDeadline,omitzero"`
	// ReservationDrain is how long before ReservationDeadline reserved nodes stop
	// taking work, so that most of what runs there ends before the deadline.
	ReservationDrain Duration `json:"reservationDrain,omitzero"`
	// ReclaimAfter is how long a job waits for room before its queue takes back what
	// other queues borrow (the reclaim action). Reclaim evicts running work, all of it
	// for work that never checkpoints, while in a busy cluster some work ends every few
	// minutes: a job that waits a little usually gets room without evicting anyone.
	// 0 reclaims at once, as Volcano's reclaim action does.
	ReclaimAfter Duration `json:"reclaimAfter,omitzero"`
	// TryEveryJob makes allocate try every job of a queue, as Volcano's allocate does,
	// instead of stopping a queue at its first job that does not fit (smaller jobs
	// behind it then wait for backfill, which keeps them from starving the head).
	TryEveryJob bool `json:"tryEveryJob,omitempty"`
	// Seed makes tie-breaking reproducible.
	Seed int64 `json:"seed,omitempty"`
	// TieBreak picks among equally scored nodes: "random" (kube-scheduler's reservoir
	// sampling, the default) or "first" (the first node in snapshot order, which packs
	// work that every node scores alike, such as CPU-only pods, onto the same nodes).
	TieBreak string `json:"tieBreak,omitempty"`
	// WholeGPUs treats every GPU share as a whole GPU, as schedulers without GPU sharing
	// do; the snapshot builder applies it to the tasks it creates.
	WholeGPUs bool `json:"wholeGPUs,omitempty"`
}

// Tier is a group of plugins; tiers are kept for Volcano compatibility and read in order.
type Tier struct {
	// Plugins are the tier's plugins; each plugin is enabled at most once.
	Plugins []PluginOption `json:"plugins"`
}

// PluginOption enables one plugin.
type PluginOption struct {
	// Name is the plugin's name.
	Name string `json:"name"`
	// Weight multiplies the plugin's score (scorers and GPU placers); default 1.
	Weight float64 `json:"weight,omitempty"`
	// Arguments are the plugin's own settings, Volcano-style keys to numbers or
	// strings; a plugin refuses arguments it does not know.
	Arguments map[string]any `json:"arguments,omitempty"`
}

func (p PluginOption) weight() float64 {
	if p.Weight == 0 {
		return 1
	}
	return p.Weight
}

// args renders argument values as strings (YAML gives numbers and strings).
func (p PluginOption) args() map[string]string {
	out := make(map[string]string, len(p.Arguments))
	for k, v := range p.Arguments {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// Duration is a time.Duration written as "10m" in YAML.
type Duration struct{ time.Duration }

// UnmarshalJSON reads "90s" or "10m".
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 30m or 1h", s)
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

// Tie-break rules.
const (
	TieBreakRandom = "random"
	TieBreakFirst  = "first"
)

// DefaultActions is the action order when the configuration names none.
const DefaultActions = "enqueue, allocate, preempt, reclaim, backfill"

func (c *Config) actionNames() []string {
	if strings.TrimSpace(c.Actions) == "" {
		return splitActions(DefaultActions)
	}
	return splitActions(c.Actions)
}

func splitActions(a string) []string {
	var out []string
	for _, n := range strings.Split(a, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// Validate checks names and ranges, naming the field and the fix.
func (c *Config) Validate() error {
	if c.PercentageOfNodesToScore < 0 || c.PercentageOfNodesToScore > 100 {
		return fmt.Errorf("percentageOfNodesToScore: %d is outside 0..100 (0 means adaptive)", c.PercentageOfNodesToScore)
	}
	if c.TieBreak != "" && c.TieBreak != TieBreakRandom && c.TieBreak != TieBreakFirst {
		return fmt.Errorf("tieBreak: %q is not %q or %q", c.TieBreak, TieBreakRandom, TieBreakFirst)
	}
	if c.ReclaimAfter.Duration < 0 {
		return fmt.Errorf("reclaimAfter: %s is negative", c.ReclaimAfter)
	}
	if c.ReservationAfter.Duration < 0 {
		return fmt.Errorf("reservationAfter: %s is negative", c.ReservationAfter)
	}
	if d := c.ReservationDeadline.Duration; d < 0 || (d > 0 && d < c.ReservationAfter.Duration) {
		return fmt.Errorf("reservationDeadline: %s is negative or below reservationAfter (%s)", c.ReservationDeadline, c.ReservationAfter)
	}
	if d := c.ReservationDrain.Duration; d < 0 || d > c.ReservationDeadline.Duration {
		return fmt.Errorf("reservationDrain: %s is outside 0..reservationDeadline (%s)", c.ReservationDrain, c.ReservationDeadline)
	}
	for _, name := range c.actionNames() {
		if _, ok := actionRegistry[name]; !ok {
			return fmt.Errorf("actions: unknown action %q; known: %s", name, knownActions())
		}
	}
	seen := map[string]string{}
	for ti, t := range c.Tiers {
		for pi, p := range t.Plugins {
			at := fmt.Sprintf("tiers[%d].plugins[%d]", ti, pi)
			if first, dup := seen[p.Name]; dup {
				return fmt.Errorf("%s.name: plugin %q is already enabled at %s; enable each plugin once", at, p.Name, first)
			}
			seen[p.Name] = at
			if _, ok := pluginRegistry[p.Name]; !ok {
				return fmt.Errorf("tiers[%d].plugins[%d].name: unknown plugin %q; known: %s", ti, pi, p.Name, knownPlugins())
			}
			if p.Weight < 0 {
				return fmt.Errorf("tiers[%d].plugins[%d].weight: %g is negative", ti, pi, p.Weight)
			}
			if _, err := newPlugin(p); err != nil {
				return fmt.Errorf("tiers[%d].plugins[%d].arguments (%s): %w", ti, pi, p.Name, err)
			}
		}
	}
	return nil
}

// LoadConfig reads a YAML configuration file (ParseConfig).
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	c, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig reads a YAML configuration strictly: unknown or duplicated fields are
// errors, and so are an empty file, an empty actions field (leave it out for
// DefaultActions) and a configuration without plugins, none of which would run as
// written.
func ParseConfig(b []byte) (Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return Config{}, yamlerr.Clean(err)
	}
	var keys map[string]any
	_ = yaml.Unmarshal(b, &keys)
	if len(keys) == 0 {
		return Config{}, fmt.Errorf("empty configuration; it needs tiers of plugins (and actions, default %q)", DefaultActions)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	if _, set := keys["actions"]; set && len(splitActions(c.Actions)) == 0 {
		return Config{}, fmt.Errorf("actions: empty; name the actions in order, for example %q, or leave the field out for that default", DefaultActions)
	}
	for ti, t := range c.Tiers {
		if len(t.Plugins) == 0 {
			return Config{}, fmt.Errorf("tiers[%d].plugins: empty; remove the tier or enable a plugin in it", ti)
		}
	}
	if len(c.Tiers) == 0 {
		return Config{}, fmt.Errorf("tiers: no plugin enabled; for example tiers: [{plugins: [{name: predicates}, {name: gpufit}]}]")
	}
	return c, nil
}

func knownPlugins() string { return strings.Join(slices.Sorted(maps.Keys(pluginRegistry)), ", ") }

func knownActions() string { return strings.Join(slices.Sorted(maps.Keys(actionRegistry)), ", ") }
