package mps

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// DefaultCommand is the MPS control program, which the NVIDIA container toolkit puts in
// a container with the compute driver capability.
const DefaultCommand = "nvidia-cuda-mps-control"

// DefaultPipeDirectory is where the MPS control daemon and its clients meet when
// CUDA_MPS_PIPE_DIRECTORY is not set.
const DefaultPipeDirectory = "/tmp/nvidia-mps"

// ControlDaemon talks to a running MPS control daemon through its control program.
type ControlDaemon struct {
	// Command is the control program (default DefaultCommand).
	Command string
	// PipeDirectory is the daemon's CUDA_MPS_PIPE_DIRECTORY; empty: the program's default
	// (DefaultPipeDirectory).
	PipeDirectory string
}

// PipeDir is the daemon's pipe directory, which its clients need too.
func (d ControlDaemon) PipeDir() string {
	if d.PipeDirectory == "" {
		return DefaultPipeDirectory
	}
	return d.PipeDirectory
}

// Running returns an error unless a control daemon answers on the pipe directory: the
// control program fails when none runs.
func (d ControlDaemon) Running(ctx context.Context) error {
	if _, err := d.run(ctx, "get_server_list"); err != nil {
		return fmt.Errorf("MPS control daemon not running: %w", err)
	}
	return nil
}

// SetPinnedMemLimit sets the default device pinned memory limit of GPU uuid to mib MiB:
// every MPS client of that GPU is held to it, whatever its own
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT says. The daemon applies it to MPS servers it starts
// afterwards; a server already running keeps the limit it started with.
func (d ControlDaemon) SetPinnedMemLimit(ctx context.Context, uuid string, mib int64) error {
	if mib <= 0 {
		return fmt.Errorf("limit of %d MiB: must be positive", mib)
	}
	_, err := d.run(ctx, fmt.Sprintf("set_default_device_pinned_mem_limit %s %dM", uuid, mib))
	return err
}

// run sends one command to the control daemon.
func (d ControlDaemon) run(ctx context.Context, command string) (string, error) {
	name := d.Command
	if name == "" {
		name = DefaultCommand
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name)
	cmd.Stdin = strings.NewReader(command + "\n")
	cmd.Env = os.Environ()
	if d.PipeDirectory != "" {
		cmd.Env = append(cmd.Env, "CUDA_MPS_PIPE_DIRECTORY="+d.PipeDirectory)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s (%q): %w: %s", name, command, err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}
