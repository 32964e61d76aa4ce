package doctest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestBlocks(t *testing.T) {
	page := "text\n<!-- runnable -->\n```sh\necho a\necho b\n```\n```sh\nkubectl get nodes\n```\n" +
		"<!-- runnable -->\n```sh\ntrue\n```\n" +
		"1. a step\n\n   <!--  runnable:  cluster -->\n   ```sh\n   kubectl get pods\n     --watch=false\n   ```\n" +
		"<!-- runnable: later -->\n```sh\nfalse\n```\n" +
		"<!-- output -->\n```\na\n```\n<!-- output: echo c -->\n```text\nc\n```\n"
	got, err := Blocks([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{Line: 3, Kind: Offline, Code: "echo a\necho b\n"},
		{Line: 11, Kind: Offline, Code: "true\n"},
		{Line: 17, Kind: Cluster, Code: "kubectl get pods\n  --watch=false\n"},
		{Line: 26, Kind: Output, Code: "a\n"},
		{Line: 30, Kind: Output, Code: "c\n", Command: "echo c"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if off := Of(got, Offline); len(off) != 2 || off[1].Line != 11 {
		t.Errorf("Of(Offline): %+v", off)
	}
	if all := Of(got, Offline, Cluster); len(all) != 3 {
		t.Errorf("Of(Offline, Cluster): %+v", all)
	}
	if all := Of(got, Output); len(all) != 2 {
		t.Errorf("Of(Offline, Cluster): %+v", all)
	}
	for _, bad := range []string{
		"<!-- runnable -->\n```yaml\na: 1\n```\n",
		"<!-- runnable -->\n```sh\necho\n",
		"<!-- runnable: cluster -->\n\n```sh\necho\n```\n",
		"<!-- output -->\ntext\n",
	} {
		if _, err := Blocks([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestRun(t *testing.T) {
	env := os.Environ()
	out, err := Run(context.Background(), Block{Code: "echo out\necho err >&2\n"}, t.TempDir(), env, 10*time.Second)
	if err != nil || out != "out\nerr\n" {
		t.Fatalf("got %q, %v", out, err)
	}
	if out, err := Run(context.Background(), Block{Code: "false | true\necho after\n"}, t.TempDir(), env, 10*time.Second); err == nil {
		t.Fatalf("a failed pipeline went on: %q", out)
	}
	if _, err := Run(context.Background(), Block{Code: "sleep 30\n"}, t.TempDir(), env, 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("timeout: %v", err)
	}
}

func TestMatch(t *testing.T) {
	out := "progress 10%\nNAME   GPUS  STATE\na      4     scheduled\nb  4  scheduled\nnote: one, two\n\ntotal: 75.0%\n"
	for _, c := range []struct {
		expected []string
		ok       bool
	}{
		{[]string{"NAME GPUS STATE\na 4 scheduled\n"}, true},
		{[]string{"NAME GPUS  STATE\n...\ntotal: 75.0%\n"}, true},
		{[]string{"a 4 ...\nb 4 scheduled\nnote: one, ...\n"}, true},
		{[]string{"a 4 scheduled\n", "note: one, two\n"}, true},
		{[]string{"note: one, two\n", "a 4 scheduled\n"}, false}, // out of order
		{[]string{"a 4 scheduled\nnote: one, two\n"}, false},     // a line left out without "..."
		{[]string{"a 8 scheduled\n"}, false},
		{[]string{"...\n"}, true},
	} {
		if err := Match(out, c.expected...); (err == nil) != c.ok {
			t.Errorf("Match(%q): %v, want ok %v", c.expected, err, c.ok)
		}
	}
}
