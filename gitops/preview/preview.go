package preview

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/sim"
	"github.com/tessera-gpu/tessera/sim/report"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// Admit passes manifests through Tessera's admission policies (the defaults plus the
// manifests' AdmissionPolicies) and returns them as admitted.
type Admit func(ctx context.Context, m *trace.Manifests) (*trace.Manifests, sim.AdmissionResult, error)

// Side is what one version of the configuration makes of the cluster.
type Side struct {
	Admission sim.AdmissionResult `json:"admission"`
	Result    sim.ManifestsResult `json:"result"`
}

// Preview is the base and the head side by side.
type Preview struct {
	// Objects are the objects head adds, removes or changes; none: no change.
	Objects []ObjectChange `json:"objects"`
	Base    Side           `json:"base"`
	Head    Side           `json:"head"`
}

// Run lays base and head over cluster, admits and schedules each with the named
// profile, or cfg when not nil (seed fixed), and returns both outcomes. With
// WithProgress, the four steps (admitting and scheduling each side) are reported.
func Run(ctx context.Context, cluster, base, head *trace.Manifests, admit Admit, profile string, cfg *scheduler.Config, seed int64, opts ...Option) (Preview, error) {
	if err := CheckPolicies(ctx, base, head); err != nil {
		return Preview{}, err
	}
	p := Preview{Objects: Diff(base, head)}
	progress := options(opts).progress(4, "admitting and scheduling base and head")
	defer progress.Done()
	for _, s := range []struct {
		repo *trace.Manifests
		out  *Side
		name string
	}{{base, &p.Base, "base"}, {head, &p.Head, "head"}} {
		m, adm, err := admit(ctx, Overlay(cluster, s.repo))
		if err != nil {
			return p, fmt.Errorf("%s: %w", s.name, err)
		}
		progress.Add(1)
		res, err := sim.RunManifests(m, profile, cfg, seed)
		if err != nil {
			return p, fmt.Errorf("%s: %w", s.name, err)
		}
		progress.Add(1)
		*s.out = Side{Admission: adm, Result: res}
	}
	return p, nil
}

// Option tunes Run and RunReplay.
type Option func(*runOptions)

type runOptions struct {
	out io.Writer // progress
}

// WithProgress reports the progress of a run on w (standard error, never the
// output): on a terminal one line redrawn in place, elsewhere a line at every tenth
// (report.Progress). A nil w reports nothing.
func WithProgress(w io.Writer) Option {
	return func(o *runOptions) { o.out = w }
}

func options(opts []Option) runOptions {
	var o runOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// progress is a progress report of total units under label, or nil (which reports
// nothing) without WithProgress.
func (o runOptions) progress(total int, label string) *report.Progress {
	if o.out == nil {
		return nil
	}
	return report.NewProgress(o.out, total, label)
}

// QueueChange is one queue's use in base and head.
type QueueChange struct {
	Queue      string
	Base, Head sim.QueueUse
}

// Changed reports whether anything of the queue differs.
func (c QueueChange) Changed() bool {
	return c.Base.AllocatedGPUs != c.Head.AllocatedGPUs || c.Base.RunningPods != c.Head.RunningPods || c.Base.PendingPods != c.Head.PendingPods
}

// Queues pairs the queues of both sides by name, in name order; a queue one side
// lacks reads as zero there.
func (p Preview) Queues() []QueueChange {
	by := map[string]*QueueChange{}
	get := func(name string) *QueueChange {
		if by[name] == nil {
			by[name] = &QueueChange{Queue: name, Base: sim.QueueUse{Queue: name}, Head: sim.QueueUse{Queue: name}}
		}
		return by[name]
	}
	for _, u := range p.Base.Result.Queues {
		get(u.Queue).Base = u
	}
	for _, u := range p.Head.Result.Queues {
		get(u.Queue).Head = u
	}
	out := make([]QueueChange, 0, len(by))
	for _, name := range slices.Sorted(maps.Keys(by)) {
		out = append(out, *by[name])
	}
	return out
}

// WriteText prints the objects that differ, the per-queue comparison and the
// admission differences.
func (p Preview) WriteText(w io.Writer) error {
	if err := writeObjectsText(w, p.Objects); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tGPUS HELD\tRUNNING PODS\tPENDING PODS")
	for _, c := range p.Queues() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", queueName(c.Queue), change(c.Base.AllocatedGPUs, c.Head.AllocatedGPUs),
			change(float64(c.Base.RunningPods), float64(c.Head.RunningPods)), change(float64(c.Base.PendingPods), float64(c.Head.PendingPods)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range p.outcomeLines() {
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// outcomeLines are the admission differences, or a line saying the outcome is the same
// although objects differ.
func (p Preview) outcomeLines() []string {
	lines := p.admissionLines()
	if len(lines) > 0 || len(p.Objects) == 0 || slices.ContainsFunc(p.Queues(), QueueChange.Changed) {
		return lines
	}
	return []string{"same outcome: on this cluster the change moves no pod and changes no admission decision"}
}

// WriteMarkdown prints the same as WriteText as markdown, for a pull request comment.
func (p Preview) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("### Tessera preview\n\n")
	writeObjectsMarkdown(&b, p.Objects)
	b.WriteString("| queue | GPUs held | running pods | pending pods |\n|---|---|---|---|\n")
	for _, c := range p.Queues() {
		mark := ""
		if c.Changed() {
			mark = " **changed**"
		}
		fmt.Fprintf(&b, "| `%s`%s | %s | %s | %s |\n", queueName(c.Queue), mark, change(c.Base.AllocatedGPUs, c.Head.AllocatedGPUs),
			change(float64(c.Base.RunningPods), float64(c.Head.RunningPods)), change(float64(c.Base.PendingPods), float64(c.Head.PendingPods)))
	}
	if lines := p.outcomeLines(); len(lines) > 0 {
		b.WriteString("\n")
		for _, l := range lines {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// admissionLines say which objects the head's policies newly deny or no longer deny,
// and how many objects each side's policies rewrite.
func (p Preview) admissionLines() []string {
	base, head := denials(p.Base.Admission), denials(p.Head.Admission)
	var out []string
	for _, obj := range slices.Sorted(maps.Keys(head)) {
		if _, ok := base[obj]; !ok {
			out = append(out, fmt.Sprintf("newly denied: %s: %s", obj, head[obj]))
		}
	}
	for _, obj := range slices.Sorted(maps.Keys(base)) {
		if _, ok := head[obj]; !ok {
			out = append(out, fmt.Sprintf("no longer denied: %s", obj))
		}
	}
	if b, h := len(p.Base.Admission.Rewritten), len(p.Head.Admission.Rewritten); b != h {
		out = append(out, fmt.Sprintf("objects rewritten by the admission policies: %d → %d", b, h))
	}
	return out
}

// denials maps each denied object to the policy's message.
func denials(r sim.AdmissionResult) map[string]string {
	out := make(map[string]string, len(r.Denied))
	for _, d := range r.Denied {
		out[d.Object] = d.Message
	}
	return out
}

// change prints a value's base and head: "4", or "4 → 6 (+2)" when it changed.
func change(base, head float64) string {
	if trim(base) == trim(head) {
		return trim(base)
	}
	sign := "+"
	if head < base {
		sign = ""
	}
	return fmt.Sprintf("%s → %s (%s%s)", trim(base), trim(head), sign, trim(head-base))
}

// trim prints a number without trailing zeros (GPU slices are fractions).
func trim(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

func queueName(q string) string {
	if q == "" {
		return "(no queue)"
	}
	return q
}
