package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/test/testenv"
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

func TestUnbuiltSubcommandExitsTwo(t *testing.T) {
	root := newRootCommand()
	root.AddCommand(notImplemented("later", "A component still to come"))
	root.SetArgs([]string{"later"})
	err := root.Execute()
	var ec *exitCodeError
	if !errors.As(err, &ec) || ec.code != 2 || !strings.Contains(err.Error(), "not implemented yet") {
		t.Fatalf("got %v, want exit code 2 with 'not implemented yet'", err)
	}
}

// TestBinaryStarts builds the binary and runs it: NVML is resolved only when the node
// agent loads it, so a dependency that makes the linker keep more of go-nvml must not
// leave the binary unable to start on machines without an NVIDIA driver.
func TestBinaryStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	out, err := exec.Command(testenv.BuildTessera(t), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "tessera ") {
		t.Fatalf("tessera version: %v: %s", err, out)
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
