package capi_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
)

var errKilled = errors.New("killed")

// budget lets a number of writes through, then fails every later one, as a process
// killed after its n-th write would have left the cluster.
type budget struct{ left atomic.Int64 }

func (b *budget) spend() error {
	if b.left.Add(-1) < 0 {
		return errKilled
	}
	return nil
}

// killable returns a client of the test's API server whose writes spend b.
func killable(t *testing.T, b *budget) client.Client {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if err := b.spend(); err != nil {
				return err
			}
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			if err := b.spend(); err != nil {
				return err
			}
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			if err := b.spend(); err != nil {
				return err
			}
			return c.Patch(ctx, o, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			if err := b.spend(); err != nil {
				return err
			}
			return c.Delete(ctx, o, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, o, body client.Object, opts ...client.SubResourceCreateOption) error {
			if err := b.spend(); err != nil {
				return err
			}
			return c.SubResource(sub).Create(ctx, o, body, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := b.spend(); err != nil {
				return err
			}
			return c.SubResource(sub).Update(ctx, o, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := b.spend(); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	})
}

// The controller killed after each of its writes, in turn, and started again: every
// run ends with the node removed, its pod evicted and no other pod lost, one Machine
// marked, the MachineDeployment lowered once (3 -> 2) and one record in the status.
func TestKilledAfterEachStepResumes(t *testing.T) {
	if env == nil {
		t.Skip("no API server")
	}
	for writes := int64(0); ; writes++ {
		h := threeNodes(t, -1)
		h.policy(tesserav1.ScaleDownPolicySpec{})
		b := &budget{}
		b.left.Store(writes)
		wc := killable(t, b)
		a := h.actuator(wc, wc)
		killed := false
		for range 10 {
			if err := h.round(a, 31*time.Second); errors.Is(err, errKilled) {
				killed = true
				break
			} else if err != nil {
				t.Fatalf("after %d writes: %v", writes, err)
			}
		}
		phase, _, _ := h.phase("a")
		// Started again, with nothing of the first run's memory.
		a = h.actuator(env.Client, env.Client)
		h.rounds(a, 8)
		h.expectPhase("a", autoscale.PhaseRemoved)
		h.expectPhase("b", "")
		h.expectPhase("c", "")
		if h.podExists("web") || !h.podExists("train-b") || !h.podExists("train-c") {
			t.Fatalf("killed after %d writes (in %q): web exists %v, train-b %v, train-c %v", writes, phase, h.podExists("web"), h.podExists("train-b"), h.podExists("train-c"))
		}
		if got := h.replicas("md"); got != 2 {
			t.Fatalf("killed after %d writes (in %q): MachineDeployment at %d replicas, want 2", writes, phase, got)
		}
		if got := h.marked(); !slices.Equal(got, []string{"ms-a"}) {
			t.Fatalf("killed after %d writes (in %q): marked %v", writes, phase, got)
		}
		if recs := h.status().RecentScaleDowns; len(recs) != 1 {
			t.Fatalf("killed after %d writes (in %q): records %+v", writes, phase, recs)
		}
		t.Logf("killed after %d writes, in phase %q: resumed", writes, phase)
		if !killed {
			return
		}
	}
}
