package mps

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// control writes a stand-in for nvidia-cuda-mps-control that records its input and
// environment, and exits with code.
func control(t *testing.T, code int) (string, string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	script := filepath.Join(dir, "nvidia-cuda-mps-control")
	body := "#!/bin/sh\necho \"pipe=$CUDA_MPS_PIPE_DIRECTORY\" >> " + log + "\ncat >> " + log + "\necho 'no daemon'\nexit " + strconv.Itoa(code) + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, log
}

func TestSetPinnedMemLimit(t *testing.T) {
	script, log := control(t, 0)
	d := ControlDaemon{Command: script, PipeDirectory: "/run/nvidia-mps"}
	if err := d.SetPinnedMemLimit(t.Context(), "GPU-aaaa", 20480); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "pipe=/run/nvidia-mps\nset_default_device_pinned_mem_limit GPU-aaaa 20480M\n"; string(got) != want {
		t.Fatalf("control daemon got %q, want %q", got, want)
	}
	if err := d.SetPinnedMemLimit(t.Context(), "GPU-aaaa", 0); err == nil {
		t.Fatal("a limit of 0 was accepted")
	}
}

func TestSetPinnedMemLimitFails(t *testing.T) {
	script, _ := control(t, 1)
	err := ControlDaemon{Command: script}.SetPinnedMemLimit(t.Context(), "GPU-aaaa", 1024)
	if err == nil || !strings.Contains(err.Error(), "no daemon") {
		t.Fatalf("error = %v, want the program's output", err)
	}
}

func TestRunning(t *testing.T) {
	script, log := control(t, 0)
	d := ControlDaemon{Command: script}
	if err := d.Running(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "pipe=\nget_server_list\n"; string(got) != want {
		t.Fatalf("control daemon got %q, want %q", got, want)
	}
	if d.PipeDir() != DefaultPipeDirectory || (ControlDaemon{PipeDirectory: "/run/nvidia-mps"}).PipeDir() != "/run/nvidia-mps" {
		t.Fatalf("PipeDir = %q", d.PipeDir())
	}
	stopped, _ := control(t, 1)
	if err := (ControlDaemon{Command: stopped}).Running(t.Context()); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("Running with no daemon: %v", err)
	}
}
