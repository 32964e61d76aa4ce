package report

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// redrawEvery limits how often a terminal progress bar is redrawn.
const redrawEvery = 100 * time.Millisecond

// barWidth is the number of cells of a terminal progress bar.
const barWidth = 30

// Progress reports the progress of a long run on a writer (stderr). On a terminal it
// redraws one line in place, at most every 100 ms; elsewhere (a file, a pipe, CI logs)
// it prints a line each time another 10% is done. Add is cheap enough to call per pod
// and safe for concurrent use.
type Progress struct {
	mu        sync.Mutex
	w         io.Writer
	label     string
	total     int
	done      int
	tty       bool
	now       func() time.Time
	start     time.Time
	lastDraw  time.Time
	lastTenth int
	// printed is p.done when the last line was printed, -1 before any.
	printed  int
	finished bool
}

// NewProgress returns a progress reporter for total units of work; a total of 0 or
// less means unknown (counts are shown without a percentage).
func NewProgress(w io.Writer, total int, label string) *Progress {
	return newProgress(w, total, label, IsTerminal(w), time.Now)
}

func newProgress(w io.Writer, total int, label string, tty bool, now func() time.Time) *Progress {
	t := now()
	return &Progress{w: w, label: label, total: total, tty: tty, now: now, start: t, printed: -1}
}

// IsTerminal reports whether w is a character device, like a terminal: where a
// command shows progress unless asked not to.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Add records n more units done. A nil *Progress does nothing.
func (p *Progress) Add(n int) {
	p.whileReporting(func() {
		p.done += n
		if p.tty {
			if t := p.now(); t.Sub(p.lastDraw) >= redrawEvery {
				p.lastDraw = t
				p.draw(t)
			}
			return
		}
		if p.total > 0 {
			if tenth := min(p.done*10/p.total, 10); tenth > p.lastTenth {
				p.lastTenth = tenth
				p.line(p.now())
			}
		}
	})
}

// Done finishes the report: the final state is drawn (a terminal line is ended with a
// newline) unless it was already printed. Later calls to Add and Done do nothing.
func (p *Progress) Done() {
	p.whileReporting(func() {
		p.finished = true
		t := p.now()
		if p.tty {
			p.draw(t)
			fmt.Fprintln(p.w)
			return
		}
		if p.done != p.printed {
			p.line(t)
		}
	})
}

// whileReporting runs f with p locked, unless p is nil or its report is finished.
func (p *Progress) whileReporting(f func()) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	f()
}

// draw redraws the terminal line in place.
func (p *Progress) draw(t time.Time) {
	elapsed := t.Sub(p.start).Seconds()
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r%s %d  %.1fs\x1b[K", p.label, p.done, elapsed)
		return
	}
	frac := min(float64(p.done)/float64(p.total), 1)
	full := int(frac * barWidth)
	bar := strings.Repeat("█", full) + strings.Repeat("░", barWidth-full)
	fmt.Fprintf(p.w, "\r%s %s %3.0f%%  %d/%d  %.1fs\x1b[K", p.label, bar, frac*100, p.done, p.total, elapsed)
}

// line prints one progress line (non-terminal output).
func (p *Progress) line(t time.Time) {
	p.printed = p.done
	elapsed := t.Sub(p.start).Seconds()
	if p.total <= 0 {
		fmt.Fprintf(p.w, "%s: %d done  %.1fs\n", p.label, p.done, elapsed)
		return
	}
	fmt.Fprintf(p.w, "%s: %3d%%  %d/%d  %.1fs\n", p.label, min(p.done*100/p.total, 100), p.done, p.total, elapsed)
}
