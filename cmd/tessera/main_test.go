package main

import (
	"bytes"
	"errors"
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

func TestUnbuiltSubcommandExitsTwo(t *testing.T) {
	root := newRootCommand()
	root.SetArgs([]string{"gitops", "lint", "gitops/clusters"})
	err := root.Execute()
	var ec *exitCodeError
	if !errors.As(err, &ec) || ec.code != 2 || !strings.Contains(err.Error(), "not implemented yet") {
		t.Fatalf("got %v, want exit code 2 with 'not implemented yet'", err)
	}
}
