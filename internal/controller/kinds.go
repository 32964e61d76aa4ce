package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// KindsWatch ends its manager, so that the process restarts, once the kinds the API
// server serves differ from those the component set its watches up for at start: a
// component started while the API server restarted, when discovery may list some
// kinds late, would otherwise never watch them (a JobSet's gang scheduled pod by pod).
type KindsWatch struct {
	// Every is how often discovery is asked again.
	Every time.Duration
	// Kinds describes what a RESTMapper serves, as the component chose its watches.
	Kinds func(apimeta.RESTMapper) string
	// Mapper is a fresh RESTMapper (its discovery new); NewMapper(cfg) by default.
	Mapper func() (apimeta.RESTMapper, error)
	// AtStart is what Kinds said when the watches were set up.
	AtStart string
	Log     logr.Logger
}

// NewMapper returns a RESTMapper of cfg's API server with discovery of its own.
func NewMapper(cfg *rest.Config) func() (apimeta.RESTMapper, error) {
	return func() (apimeta.RESTMapper, error) {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, err
		}
		return apiutil.NewDynamicRESTMapper(cfg, hc)
	}
}

// Start asks discovery again every Every until ctx ends, and returns an error (ending
// the manager) once the kinds differ from AtStart on two looks in a row (one discovery
// error makes a kind look unserved).
func (k KindsWatch) Start(ctx context.Context) error {
	tick := time.NewTicker(k.Every)
	defer tick.Stop()
	last := k.AtStart
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		m, err := k.Mapper()
		if err != nil {
			continue
		}
		now := k.Kinds(m)
		if now != k.AtStart && now == last {
			k.Log.Info("the API server serves other kinds than at start; restarting to watch them", "atStart", k.AtStart, "now", now)
			return fmt.Errorf("served kinds changed since start (%s, now %s): restart to watch them", k.AtStart, now)
		}
		last = now
	}
}

// NeedLeaderElection is false: every replica's watches must match.
func (KindsWatch) NeedLeaderElection() bool { return false }
