package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func run(root *cobra.Command, args ...string) (string, error) {
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func newRoot(on *bool) *cobra.Command {
	root := &cobra.Command{Use: "x", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error { return nil }}
	root.Flags().BoolVar(on, "on", false, "a switch")
	AddVersion(root)
	PlainBoolFlags(root)
	return root
}

func TestVersionAndPlainBoolFlags(t *testing.T) {
	var on bool
	sub, err := run(newRoot(&on), "version")
	if err != nil || !strings.HasPrefix(sub, "tessera ") {
		t.Fatalf("version: %q, %v", sub, err)
	}
	flag, err := run(newRoot(&on), "--version")
	if err != nil || flag != sub {
		t.Errorf("--version %q (%v), version %q", flag, err, sub)
	}
	if _, err := run(newRoot(&on), "-v"); err == nil {
		t.Error("-v is --version: -v is the log level where there is one")
	}
	help, err := run(newRoot(&on), "--help")
	if err != nil || strings.Contains(help, "[=true|false]") || !strings.Contains(help, "--on ") {
		t.Errorf("help (%v):\n%s", err, help)
	}
	for _, c := range []struct {
		args []string
		want bool
	}{{[]string{"--on"}, true}, {[]string{"--on=false"}, false}, {nil, false}} {
		on = !c.want
		if _, err := run(newRoot(&on), c.args...); err != nil || on != c.want {
			t.Errorf("%v: on=%t (%v), want %t", c.args, on, err, c.want)
		}
	}
}
