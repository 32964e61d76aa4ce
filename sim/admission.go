package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// Admitter decides object creates as Tessera's admission webhooks do (webhooks.Local):
// it changes obj in place as the mutating webhook's patch would and returns the
// policies' warnings, or an error when they deny the object; a denial's error has a
// DenialMessage method.
type Admitter interface {
	Admit(ctx context.Context, obj runtime.Object) ([]string, error)
}

// Denial is an object the admission policies rejected.
type Denial struct {
	Object  string `json:"object"` // kind namespace/name
	Message string `json:"message"`
}

// AdmissionResult is what the admission policies made of the manifests.
type AdmissionResult struct {
	Denied   []Denial `json:"denied"`
	Warnings []string `json:"warnings"`
	// Rewritten are the objects (kind namespace/name) the mutating policies changed.
	Rewritten []string `json:"rewritten"`
}

// AdmitManifests runs the creates of the manifests' Queues, PodGroups, Jobs and
// unbound Pods through adm, in that order, and returns the manifests as admitted:
// mutated, without the denied objects. Pods already bound to a node were admitted when
// they were created and stay as they are. m is not changed.
func AdmitManifests(ctx context.Context, m *trace.Manifests, adm Admitter) (*trace.Manifests, AdmissionResult, error) {
	out := *m
	var res AdmissionResult
	var err error
	if out.Queues, err = admitEach(ctx, adm, "Queue", m.Queues, nil, &res); err != nil {
		return nil, res, err
	}
	if out.PodGroups, err = admitEach(ctx, adm, "PodGroup", m.PodGroups, nil, &res); err != nil {
		return nil, res, err
	}
	if out.Jobs, err = admitEach(ctx, adm, "Job", m.Jobs, nil, &res); err != nil {
		return nil, res, err
	}
	bound := func(p *corev1.Pod) bool { return p.Spec.NodeName != "" }
	if out.Pods, err = admitEach(ctx, adm, "Pod", m.Pods, bound, &res); err != nil {
		return nil, res, err
	}
	return &out, res, nil
}

// admitEach admits a deep copy of every object of in that skip does not exempt.
func admitEach[T any, P interface {
	*T
	runtime.Object
	metav1.Object
}](ctx context.Context, adm Admitter, kind string, in []T, skip func(P) bool, res *AdmissionResult) ([]T, error) {
	out := make([]T, 0, len(in))
	for i := range in {
		obj := P(&in[i]).DeepCopyObject().(P)
		if skip == nil || !skip(obj) {
			name := kind + " " + obj.GetName()
			if ns := obj.GetNamespace(); ns != "" {
				name = kind + " " + ns + "/" + obj.GetName()
			}
			warnings, err := adm.Admit(ctx, obj)
			for _, w := range warnings {
				res.Warnings = append(res.Warnings, name+": "+w)
			}
			var denial interface{ DenialMessage() string }
			if errors.As(err, &denial) {
				res.Denied = append(res.Denied, Denial{Object: name, Message: denial.DenialMessage()})
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("admission of %s: %w", name, err)
			}
			if !equality.Semantic.DeepEqual(obj, P(&in[i])) {
				res.Rewritten = append(res.Rewritten, name)
			}
		}
		out = append(out, *obj)
	}
	return out, nil
}

// ManifestGPUNodes describes the GPUs of the manifests' nodes as the node agent would
// publish them, for the admission policies' view of the cluster (the largest GPU, the
// GPU capacity). Nodes the scheduler could not read are left out; RunManifests
// reports them.
func ManifestGPUNodes(m *trace.Manifests) []tesserav1.GPUNode {
	b := snapshot.NewBuilder(time.Unix(0, 0), snapshot.Options{})
	for i := range m.Nodes {
		b.AddNode(&m.Nodes[i], nil)
	}
	snap, _ := b.Build()
	out := make([]tesserav1.GPUNode, 0, len(snap.Nodes))
	for _, n := range snap.Nodes {
		g := tesserav1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}
		for _, d := range n.GPUs {
			g.Status.Devices = append(g.Status.Devices, tesserav1.GPUDevice{Index: int32(d.Index), UUID: d.UUID, Model: d.Model,
				MemoryMiB: d.MemoryMiB, Healthy: d.Healthy})
		}
		out = append(out, g)
	}
	return out
}

// WriteAdmissionResult prints the denied objects and the warnings; nothing when there
// are none.
func WriteAdmissionResult(w io.Writer, r AdmissionResult) error {
	if len(r.Denied) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "DENIED BY ADMISSION\tMESSAGE")
		for _, d := range r.Denied {
			fmt.Fprintf(tw, "%s\t%s\n", d.Object, d.Message)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, warning := range r.Warnings {
		if _, err := fmt.Fprintf(w, "admission warning: %s\n", warning); err != nil {
			return err
		}
	}
	if len(r.Denied)+len(r.Warnings) > 0 {
		_, err := fmt.Fprintln(w)
		return err
	}
	return nil
}
