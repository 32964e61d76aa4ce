package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	doc := "# t\n\n<!-- figures: tessera simulate --seeds 1 --format markdown -->\nold\n<!-- /figures -->\n\ntext `<!-- figures: not a marker -->`\n<!-- figures: go test ./x -bench . -->\n<!-- /figures -->\n"
	blocks, err := parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0] != (block{"tessera simulate --seeds 1 --format markdown", 3}) || blocks[1].line != 8 {
		t.Errorf("blocks %+v", blocks)
	}
	for in, want := range map[string]string{
		"<!-- figures: a -->\n": "line 1: the block is not closed",
		"<!-- figures: a -->\n<!-- figures: b -->\n<!-- /figures -->": "line 2: a block opens before the block of line 1 closes",
		"<!-- /figures -->\n":                     "line 1: <!-- /figures --> without a block open",
		"<!-- figures: a\n-->\n<!-- /figures -->": "line 1: the marker must end on its line",
		"<!-- figures: -->\n<!-- /figures -->":    "line 1: a block without a command",
		"<!-- figures: a -->\n<!-- /figures -->\n<!-- figures: a -->\n<!-- /figures -->": "line 3: the command of the block of line 1 again",
	} {
		if _, err := parse(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func TestReplace(t *testing.T) {
	doc := "a\n<!-- figures: one -->\nold\nold\n<!-- /figures -->\n<!-- figures: two -->\n<!-- /figures -->\nb\n"
	got, err := replace(doc, "two", "\nnew\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\n<!-- figures: one -->\nold\nold\n<!-- /figures -->\n<!-- figures: two -->\n\nnew\n\n<!-- /figures -->\nb\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got, _ = replace(got, "one", "x"); !strings.HasPrefix(got, "a\n<!-- figures: one -->\nx\n<!-- /figures -->\n") {
		t.Errorf("got\n%s", got)
	}
	if _, err := replace(doc, "three", ""); err == nil {
		t.Error("no error for a block that is not there")
	}
}

func TestRender(t *testing.T) {
	md := render("tessera simulate --format markdown", "| a |\n|---|\n| 1 |\n\n", 61*time.Second, "1.5")
	if !strings.HasPrefix(md, "\n| a |\n|---|\n| 1 |\n\n<sub>Printed by `tessera simulate --format markdown`; `make figures` reran it in 1m1s on ") {
		t.Errorf("markdown:\n%s", md)
	}
	if txt := render("tessera version", "v1\n", time.Second, ""); !strings.HasPrefix(txt, "\n```text\nv1\n```\n\n<sub>") {
		t.Errorf("text:\n%s", txt)
	}
	bench := "goos: linux\ncpu: Some CPU @ 2.0GHz\nBenchmarkA/x-2   \t       3\t 1816967 ns/op\t 0.81 p99-ms\t 10 B/op\nBenchmarkB-2 1 5377439912 ns/op\nBenchmarkC-2 1 412 ns/op\nPASS\nok  \tpkg\t1.2s\n"
	want := "| benchmark | iterations | time/op | p99-ms | B/op |\n|---|---:|---:|---:|---:|\n| BenchmarkA/x-2 | 3 | 1.82 ms | 0.81 | 10 |\n| BenchmarkB-2 | 1 | 5.38 s | – | – |\n| BenchmarkC-2 | 1 | 412 ns | – | – |\n\nCPU: Some CPU @ 2.0GHz"
	got := render("go test ./x -run '^$' -bench .", bench, time.Second, "18.61")
	if !strings.HasPrefix(got, "\n"+want+"\n\n<sub>") || !strings.HasSuffix(got, " cores, load average 18.61.</sub>\n") {
		t.Errorf("bench:\n%s\nwant\n%s", got, want)
	}
}

// run reruns the selected blocks with bin/ first on PATH and leaves the others.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "tessera"), []byte("#!/bin/sh\necho \"| args |\"\necho '|---|'\necho \"| $* |\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(dir, "README.md")
	doc := "x\n<!-- figures: tessera simulate --seeds 1 --format markdown -->\nold\n<!-- /figures -->\n<!-- figures: tessera simulate --seeds 2 --format markdown -->\nold\n<!-- /figures -->\n"
	if err := os.WriteFile(readme, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{readme}, "--seeds 2", bin, io.Discard); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(readme)
	if !strings.Contains(string(got), "--seeds 1 --format markdown -->\nold\n") || !strings.Contains(string(got), "\n| simulate --seeds 2 --format markdown |\n\n<sub>Printed by") {
		t.Errorf("README:\n%s", got)
	}
	if err := run([]string{readme}, "--seeds 3", bin, io.Discard); err == nil || !strings.Contains(err.Error(), "no block's command contains") {
		t.Errorf("no block selected: %v", err)
	}
	if err := os.WriteFile(readme, []byte("<!-- figures: false -->\nold\n<!-- /figures -->\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{readme}, "", bin, io.Discard); err == nil {
		t.Error("a failing command is not an error")
	}
	if got, _ := os.ReadFile(readme); string(got) != "<!-- figures: false -->\nold\n<!-- /figures -->\n" {
		t.Errorf("a failing command's block changed:\n%s", got)
	}
}
