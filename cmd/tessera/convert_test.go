package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertExitCodes: a good file converts (exit 0), an empty file, an unknown
// apiVersion and a mistyped subcommand are unusable input (exit 2).
func TestConvertExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := "../../volcano/testdata/volcano.yaml"
	empty := write("empty.yaml", "")
	v9 := write("v9.yaml", "apiVersion: batch.volcano.sh/v9\nkind: Job\nmetadata: {name: j}\nspec: {}\n")
	for _, tc := range []exitCase{
		{"convert volcano " + good, 0, ""},
		{"convert volcano " + empty, 2, "empty.yaml: no objects"},
		{"convert volcano " + good + " " + v9, 2, "apiVersion batch.volcano.sh/v9"},
		{"convert volcano /nonexistent.yaml", 2, "nonexistent"},
		{"convert volcano", 2, "arg"},
		{"convert vulcano " + good, 2, `unknown command "vulcano" for "tessera convert"; did you mean volcano?`},
	} {
		out := tc.run(t)
		if tc.code == 0 && !strings.Contains(out, "restartPolicy: OnFailure") {
			t.Errorf("%s: output lacks the restart policy:\n%s", tc.args, out)
		}
		if tc.code != 0 && out != "" {
			t.Errorf("%s: wrote %q before failing", tc.args, out)
		}
	}
	if help, _ := execute("convert", "volcano", "--help"); !strings.Contains(help, "Exit codes: 0 clean, 1 is not used") {
		t.Errorf("help does not document the exit codes:\n%s", help)
	}
}
