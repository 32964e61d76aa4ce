package minruntime

import (
	"fmt"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "minruntime"

// MinRuntime is the victim filter.
type MinRuntime struct {
	// Default applies to jobs that set no minRuntime.
	Default time.Duration
}

var _ framework.VictimFilter = MinRuntime{}

// New returns the filter without a default guard.
func New() *MinRuntime { return &MinRuntime{} }

// Configure reads minruntime.default, the guard of jobs that set no minRuntime.
func (m *MinRuntime) Configure(args map[string]string) error {
	for k, v := range args {
		if k != "minruntime.default" {
			return fmt.Errorf("unknown argument %s; known: minruntime.default", k)
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("minruntime.default: %q is not a duration such as 10m", v)
		}
		m.Default = d
	}
	return nil
}

// Name implements framework.Plugin.
func (MinRuntime) Name() string { return Name }

// Evictable implements framework.VictimFilter. The guard is capped by the job's
// queue's MaxMinRuntime.
func (m MinRuntime) Evictable(j *framework.Job, now time.Time) bool {
	d := j.MinRuntime
	if d == 0 {
		d = m.Default
	}
	if q := j.Queue; q != nil && q.MaxMinRuntime > 0 {
		d = min(d, q.MaxMinRuntime)
	}
	if d == 0 {
		return true
	}
	start := j.StartedAt()
	return start.IsZero() || now.Sub(start) >= d
}
