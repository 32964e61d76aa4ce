package main

import (
	"errors"
	"strings"
	"testing"
)

func TestAutoscalerCommands(t *testing.T) {
	root := newRootCommand()
	root.SetArgs([]string{"autoscaler"})
	var ec *exitCodeError
	if err := root.Execute(); !errors.As(err, &ec) || ec.code != 2 || !strings.Contains(err.Error(), "tessera autoscaler plan") {
		t.Fatalf("autoscaler: %v, want exit code 2 pointing at plan", err)
	}
	root = newRootCommand()
	root.SetArgs([]string{"autoscaler", "plan", "-o", "yaml"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), `-o "yaml": use text or json`) {
		t.Fatalf("plan -o yaml: %v", err)
	}
}
