package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "tessera ") {
		t.Fatalf("version output %q", out.String())
	}
}

// --version and `tessera version` print the same line; help shows boolean flags
// without pflag's "[=true|false]".
func TestVersionFlagAndPlainBoolHelp(t *testing.T) {
	version, err := execute("version")
	if err != nil {
		t.Fatal(err)
	}
	flag, err := execute("--version")
	if err != nil || flag != version {
		t.Errorf("--version %q (%v), version %q", flag, err, version)
	}
	help, err := execute("simulate", "--help")
	if err != nil || strings.Contains(help, "[=true|false]") || !strings.Contains(help, "--admission ") {
		t.Errorf("help (%v):\n%s", err, help)
	}
}
