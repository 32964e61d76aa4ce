package main

import (
	"strings"
	"testing"
)

func TestAutoscalerCommands(t *testing.T) {
	root := newRootCommand()
	root.SetArgs([]string{"autoscaler", "--leader-elect=false", "--kubeconfig", "/nonexistent"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Fatalf("autoscaler with a missing kubeconfig: %v", err)
	}
	root = newRootCommand()
	root.SetArgs([]string{"autoscaler", "plan", "-o", "yaml"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), `-o "yaml": use text or json`) {
		t.Fatalf("plan -o yaml: %v", err)
	}
}
