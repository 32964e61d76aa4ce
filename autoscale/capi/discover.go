package capi

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tessera-gpu/tessera/autoscale"
)

// Discovering is the Infrastructure of a cluster that may serve Cluster API: whether it
// does is looked up when first needed and, while it does not, again at most every
// Recheck, and always before a Machine would be marked. An autoscaler that started while
// its API server restarted, when discovery may not list Cluster API's kinds yet, so
// finds the Machines once they are served, instead of leaving every node it drains
// cordoned for good.
type Discovering struct {
	Config  *rest.Config
	Recheck time.Duration
	Log     logr.Logger
	// served looks the kinds up; nil: a fresh client's discovery (Installed).
	served func(ctx context.Context) (*Provider, error)

	mu       sync.Mutex
	provider *Provider
	checked  time.Time
}

// lookUp returns the Provider once Cluster API is served, nil while it is not; force
// skips the Recheck wait.
func (d *Discovering) lookUp(ctx context.Context, force bool) (*Provider, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.provider != nil {
		return d.provider, nil
	}
	if !force && !d.checked.IsZero() && time.Since(d.checked) < d.Recheck {
		return nil, nil
	}
	d.checked = time.Now()
	served := d.served
	if served == nil {
		served = d.discover
	}
	p, err := served(ctx)
	if err != nil || p == nil {
		return nil, err
	}
	d.Log.Info("Cluster API's Machines are served: scale-downs go through them")
	d.provider = p
	return p, nil
}

// discover asks the API server, with a client of its own (its discovery fresh), whether
// it serves Cluster API's Machines.
func (d *Discovering) discover(context.Context) (*Provider, error) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(d.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("management cluster client: %w", err)
	}
	ok, err := Installed(c.RESTMapper())
	if err != nil || !ok {
		return nil, err
	}
	return New(c), nil
}

// NodeGroups implements actuator.Infrastructure; none while Cluster API is not served.
func (d *Discovering) NodeGroups(ctx context.Context, nodes []*corev1.Node) (map[string]string, map[string]autoscale.Group, error) {
	p, err := d.lookUp(ctx, false)
	if err != nil || p == nil {
		return nil, nil, err
	}
	return p.NodeGroups(ctx, nodes)
}

// Mark implements actuator.Infrastructure: it looks Cluster API up again first, and
// returns "" (no Machine) only when it is still not served.
func (d *Discovering) Mark(ctx context.Context, node *corev1.Node, now time.Time) (string, error) {
	p, err := d.lookUp(ctx, true)
	if err != nil || p == nil {
		return "", err
	}
	return p.Mark(ctx, node, now)
}

// Lower implements actuator.Infrastructure.
func (d *Discovering) Lower(ctx context.Context, node *corev1.Node, settledBy time.Time) (string, error) {
	p, err := d.lookUp(ctx, true)
	if err != nil {
		return "", err
	}
	if p == nil {
		return "", fmt.Errorf("the cluster serves no Cluster API Machines (cluster.x-k8s.io/v1beta2) now")
	}
	return p.Lower(ctx, node, settledBy)
}

// Unmark implements actuator.Infrastructure.
func (d *Discovering) Unmark(ctx context.Context, node *corev1.Node) error {
	p, err := d.lookUp(ctx, true)
	if err != nil || p == nil {
		return err
	}
	return p.Unmark(ctx, node)
}
