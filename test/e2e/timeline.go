package e2e

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Timeline prints what happens, with the time since the run began, and samples the
// GPUs allocated and the nodes present for the chart at the end.
type Timeline struct {
	out   io.Writer
	start time.Time

	mu      sync.Mutex
	samples []Sample
}

// Sample is the cluster at one moment.
type Sample struct {
	At           time.Duration
	AllocatedGPU float64
	Nodes        int
}

// NewTimeline starts a timeline writing to out.
func NewTimeline(out io.Writer) *Timeline { return &Timeline{out: out, start: time.Now()} }

// Logf prints one event.
func (tl *Timeline) Logf(format string, args ...any) {
	fmt.Fprintf(tl.out, "%8s  %s\n", time.Since(tl.start).Round(time.Second), fmt.Sprintf(format, args...))
}

// Sample records allocation every interval until ctx ends.
func (tl *Timeline) Sample(ctx context.Context, c client.Client, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if s, err := sample(ctx, c); err == nil {
			s.At = time.Since(tl.start)
			tl.mu.Lock()
			tl.samples = append(tl.samples, s)
			tl.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sample counts the GPUs held by pods bound and not finished (a memory slice counts
// as its share of an 80 GiB GPU) and the Nodes.
func sample(ctx context.Context, c client.Client) (Sample, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return Sample{}, err
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return Sample{}, err
	}
	s := Sample{Nodes: len(nodes.Items)}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		s.AllocatedGPU += podGPUs(&p)
	}
	return s, nil
}

// podGPUs is what a pod holds in GPUs.
func podGPUs(p *corev1.Pod) float64 {
	var gpus float64
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[tesserav1.ResourceGPU]; ok {
			gpus += float64(q.Value())
		} else if q, ok := c.Resources.Requests[tesserav1.ResourceGPUMemory]; ok {
			gpus += float64(q.Value()) / gpuMemoryMiB
		}
	}
	return gpus
}

// gpuMemoryMiB is the memory of the simulated A100-80GB.
const gpuMemoryMiB = 81920

// Chart draws the samples: GPUs allocated as bars against the GPUs of the nodes present.
func (tl *Timeline) Chart(gpusPerNode int) string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%8s  %5s %5s  %s\n", "time", "GPUs", "nodes", "allocated # / capacity . (1 char = 2 GPUs)")
	step := max(1, (len(tl.samples)+39)/40)
	for i := 0; i < len(tl.samples); i += step {
		s := tl.samples[i]
		capacity := s.Nodes * gpusPerNode
		bar := strings.Repeat("#", int(s.AllocatedGPU+1)/2) + strings.Repeat(".", max(0, (capacity-int(s.AllocatedGPU+1))/2))
		fmt.Fprintf(&b, "%8s  %5.1f %5d  %s\n", s.At.Round(time.Second), s.AllocatedGPU, s.Nodes, bar)
	}
	return b.String()
}
