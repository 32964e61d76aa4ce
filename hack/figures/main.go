// Command figures reruns the commands behind the measured tables of README.md and
// docs/*.md and writes their output in place (`make figures`, which builds bin/tessera
// first). A table is a block of the document between two markers:
//
//	<!-- figures: tessera simulate --scenario operator --seeds 3 --format markdown -->
//	...
//	<!-- /figures -->
//
// figures runs the command with sh in the repository root, bin/ first on PATH (so
// `tessera` is the binary just built), its stderr shown as it runs, and replaces what is
// between the markers with its stdout and a line that gives the command. Output of a
// command that asks for markdown goes in as it is; `go test -bench` output becomes a
// table of its benchmark lines (ns/op as a time), with the load average of the
// machine; anything else goes in a text code block. Each document
// is rewritten after each of its blocks, so an interrupted run keeps what it finished;
// a failing command stops the run and leaves its block as it was.
//
// -only (FIGURES=... in make) reruns only the blocks whose command contains it.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The markers: a block opens with a line startMarker + command + endComment and
// closes with a line closeMarker, each alone on its line.
const (
	startMarker = "<!-- figures:"
	endComment  = "-->"
	closeMarker = "<!-- /figures -->"
)

func main() {
	only := flag.String("only", "", "rerun only the blocks whose command contains this (make figures FIGURES=...)")
	bin := flag.String("bin", "bin", "directory put first on PATH, where `make build` puts tessera")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./hack/figures [-only SUBSTRING] [FILE.md ...]\n"+
			"Reruns the commands of the <!-- figures: ... --> blocks of README.md and docs/*.md (or the files given) and writes their output in place.\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	files := flag.Args()
	if len(files) == 0 {
		docs, _ := filepath.Glob("docs/*.md")
		files = append([]string{"README.md"}, docs...)
	}
	if err := run(files, *only, *bin, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "figures: %v\n", err)
		os.Exit(1)
	}
}

// job is one block to rerun.
type job struct {
	file  string
	block block
}

// run reruns the selected blocks of files, in order, and reports progress on log.
func run(files []string, only, bin string, log io.Writer) error {
	binDir, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(binDir, "tessera")); err != nil {
		return fmt.Errorf("%s/tessera is missing: run make build first (make figures does)", bin)
	}
	var jobs []job
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		blocks, err := parse(string(text))
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, b := range blocks {
			if strings.Contains(b.command, only) {
				jobs = append(jobs, job{f, b})
			}
		}
	}
	if len(jobs) == 0 {
		return fmt.Errorf("no block's command contains %q in %s", only, strings.Join(files, ", "))
	}
	type done struct {
		where, command string
		took, cpu      time.Duration
	}
	var report []done
	start := time.Now()
	for i, j := range jobs {
		where := fmt.Sprintf("%s:%d", j.file, j.block.line)
		fmt.Fprintf(log, "figures: [%d/%d] %s: %s\n", i+1, len(jobs), where, j.block.command)
		load := loadAverage()
		out, took, cpu, err := execute(j.block.command, binDir)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", where, j.block.command, err)
		}
		// Reread the file: an earlier block of it has been rewritten, and a block is
		// found again by its command, not by its line.
		text, err := os.ReadFile(j.file)
		if err != nil {
			return err
		}
		updated, err := replace(string(text), j.block.command, render(j.block.command, out, took, load))
		if err != nil {
			return fmt.Errorf("%s: %w", j.file, err)
		}
		if err := os.WriteFile(j.file, []byte(updated), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(log, "figures: [%d/%d] %s: done in %s (%s CPU); %s total\n", i+1, len(jobs), where, round(took), round(cpu), round(time.Since(start)))
		report = append(report, done{where, j.block.command, took, cpu})
	}
	fmt.Fprintf(log, "figures: %d blocks rewritten in %s:\n", len(report), round(time.Since(start)))
	for _, d := range report {
		fmt.Fprintf(log, "  %8s  %8s CPU  %s  %s\n", round(d.took), round(d.cpu), d.where, d.command)
	}
	return nil
}

// execute runs command with sh in the current directory, binDir first on PATH, its
// stderr passed through, and returns its stdout, the wall time and the CPU time of the
// command and the processes it waited for.
func execute(command, binDir string) (string, time.Duration, time.Duration, error) {
	cmd := exec.Command("sh", "-c", command)
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return "", took, cpu, err
	}
	if strings.TrimSpace(out.String()) == "" {
		return "", took, cpu, errors.New("printed nothing")
	}
	return out.String(), took, cpu, nil
}

// block is one marked block of a document: its command and the line (1-based) of its
// opening marker.
type block struct {
	command string
	line    int
}

// parse finds the blocks of a document. A block must close before the next opens, and
// a command may mark one block of a document only (blocks are found again by their
// command).
func parse(text string) ([]block, error) {
	var blocks []block
	open := -1
	seen := map[string]int{}
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, startMarker):
			if open >= 0 {
				return nil, fmt.Errorf("line %d: a block opens before the block of line %d closes (%s)", i+1, blocks[open].line, closeMarker)
			}
			if !strings.HasSuffix(l, endComment) {
				return nil, fmt.Errorf("line %d: the marker must end on its line with %s", i+1, endComment)
			}
			c := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, startMarker), endComment))
			if c == "" {
				return nil, fmt.Errorf("line %d: a block without a command", i+1)
			}
			if at, dup := seen[c]; dup {
				return nil, fmt.Errorf("line %d: the command of the block of line %d again; a command marks one block", i+1, at)
			}
			seen[c] = i + 1
			blocks = append(blocks, block{command: c, line: i + 1})
			open = len(blocks) - 1
		case l == closeMarker:
			if open < 0 {
				return nil, fmt.Errorf("line %d: %s without a block open", i+1, closeMarker)
			}
			open = -1
		}
	}
	if open >= 0 {
		return nil, fmt.Errorf("line %d: the block is not closed with %s", blocks[open].line, closeMarker)
	}
	return blocks, nil
}

// replace puts content between the markers of the block of command.
func replace(text, command, content string) (string, error) {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, startMarker) || strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(t, startMarker), endComment)) != command {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == closeMarker {
				out := append(append(append([]string{}, lines[:i+1]...), strings.Split(content, "\n")...), lines[j:]...)
				return strings.Join(out, "\n"), nil
			}
		}
		return "", fmt.Errorf("the block of %q is not closed", command)
	}
	return "", fmt.Errorf("the block of %q is gone", command)
}

// render is what goes between a block's markers: a blank line, the output (as
// markdown, a benchmark table or a text code block), the line that gives the command,
// a blank line. load is the load average while a benchmark ran.
func render(command, out string, took time.Duration, load string) string {
	var body string
	switch {
	case strings.Contains(command, "--format markdown") || strings.Contains(command, "-o markdown"):
		body = strings.TrimRight(out, "\n")
	case strings.HasPrefix(command, "go test") && strings.Contains(command, "-bench"):
		body = benchTable(out)
		// Benchmarks time the wall clock: say how busy the machine was.
		if load != "" {
			return fmt.Sprintf("\n%s\n\n<sub>Printed by `%s`; `make figures` reran it in %s on %d cores, load average %s.</sub>\n",
				body, command, round(took), runtime.NumCPU(), load)
		}
	default:
		body = "```text\n" + strings.TrimRight(out, "\n") + "\n```"
	}
	return fmt.Sprintf("\n%s\n\n<sub>Printed by `%s`; `make figures` reran it in %s on %d cores.</sub>\n",
		body, command, round(took), runtime.NumCPU())
}

// loadAverage is the machine's load average over the last minute, "" where
// /proc/loadavg is missing.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// benchTable turns `go test -bench` output into a markdown table, a row per benchmark
// line and a column per unit, with the line naming the CPU under it.
func benchTable(out string) string {
	var units []string
	type row struct {
		name, n string
		values  map[string]string
	}
	var rows []row
	var cpu string
	for _, l := range strings.Split(out, "\n") {
		if c, ok := strings.CutPrefix(l, "cpu: "); ok {
			cpu = c
		}
		f := strings.Fields(l)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		r := row{name: f[0], n: f[1], values: map[string]string{}}
		for k := 2; k+1 < len(f); k += 2 {
			unit, v := f[k+1], f[k]
			if unit == "ns/op" {
				unit, v = "time/op", nsDuration(v)
			}
			if !slices.Contains(units, unit) {
				units = append(units, unit)
			}
			r.values[unit] = v
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return "```text\n" + strings.TrimRight(out, "\n") + "\n```"
	}
	var b strings.Builder
	b.WriteString("| benchmark | iterations | " + strings.Join(units, " | ") + " |\n|---|---:")
	b.WriteString(strings.Repeat("|---:", len(units)) + "|\n")
	for _, r := range rows {
		b.WriteString("| " + r.name + " | " + r.n)
		for _, u := range units {
			v := r.values[u]
			if v == "" {
				v = "–"
			}
			b.WriteString(" | " + v)
		}
		b.WriteString(" |\n")
	}
	if cpu != "" {
		b.WriteString("\nCPU: " + cpu + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// nsDuration writes a ns/op figure with three significant digits in s, ms, µs or ns;
// a figure it cannot read stays as it is, with its unit.
func nsDuration(v string) string {
	ns, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return v + " ns"
	}
	for _, u := range []struct {
		name string
		ns   float64
	}{{"s", 1e9}, {"ms", 1e6}, {"µs", 1e3}} {
		if ns >= u.ns {
			return strconv.FormatFloat(ns/u.ns, 'g', 3, 64) + " " + u.name
		}
	}
	return strconv.FormatFloat(ns, 'g', 3, 64) + " ns"
}

// round shortens a duration for people: whole seconds, tenths under ten seconds.
func round(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
