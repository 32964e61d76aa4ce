package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tessera-gpu/tessera/nodeagent/toolkit"
)

// The node agents are the DRA driver gpu.tessera.dev of their nodes. Every agent runs on
// this one machine, so each has its own kubelet plugin, registration and CDI directories
// (NodeDirs); all of them run with MPS on GPUs in EXCLUSIVE_PROCESS compute mode, so that
// each GPU is published as a device shared by memory. A stand-in MPS control program on
// the agents' PATH answers every command as a running control daemon does, and the
// NVIDIA container toolkit's configuration they check refuses device lists from the
// environment, as the chart's installation requires.

// NodeDirs are the directories a node's agent uses in place of the kubelet's.
type NodeDirs struct {
	// Plugins holds the DRA driver's socket in gpu.tessera.dev/; Registry its
	// registration socket; CDI the claims' CDI specs; MPSPipe the MPS pipe directory
	// the prepared shares name.
	Plugins, Registry, CDI, MPSPipe string
}

// NodeDirs returns the directories of node's agent. They are short: a unix socket's
// path holds at most 107 bytes.
func (c *Cluster) NodeDirs(node string) NodeDirs {
	root := filepath.Join(c.Dir, "n", node)
	return NodeDirs{Plugins: filepath.Join(root, "p"), Registry: filepath.Join(root, "r"),
		CDI: filepath.Join(root, "cdi"), MPSPipe: filepath.Join(root, "mps")}
}

// mpsControl is the stand-in for nvidia-cuda-mps-control: a control daemon that runs and
// accepts every command.
const mpsControl = "#!/bin/sh\n# Stands in for nvidia-cuda-mps-control with its daemon running.\ncat >/dev/null\n"

// writeAgentSupport writes, under dir, the stand-in MPS control program (in dir/bin) and
// the toolkit configuration every agent reads; it returns the PATH entry and the file.
func writeAgentSupport(dir string) (bin, toolkitConfig string, err error) {
	bin = filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(bin, "nvidia-cuda-mps-control"), []byte(mpsControl), 0o755); err != nil {
		return "", "", err
	}
	toolkitConfig = filepath.Join(dir, "nvidia-container-runtime.toml")
	if err := os.WriteFile(toolkitConfig, []byte(toolkit.KeyEnvvarWhenUnprivileged+" = false\n"), 0o644); err != nil {
		return "", "", err
	}
	return bin, toolkitConfig, nil
}

// agentDRA returns the DRA flags and environment of node's agent, its directories made.
func (c *Cluster) agentDRA(node string) (args, env []string, err error) {
	d := c.NodeDirs(node)
	for _, dir := range []string{d.Plugins, d.Registry, d.CDI, d.MPSPipe} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, err
		}
	}
	args = []string{"--dra=on", "--mps", "--fake-compute-mode=exclusive-process", "--toolkit-config=" + c.toolkitConfig,
		"--kubelet-plugins-dir=" + d.Plugins, "--kubelet-registry-dir=" + d.Registry, "--cdi-spec-dir=" + d.CDI,
		"--mps-pipe-directory=" + d.MPSPipe}
	return args, []string{"PATH=" + c.mpsBin + string(os.PathListSeparator) + os.Getenv("PATH")}, nil
}

// installDeviceClasses creates Tessera's DeviceClasses as the chart renders them.
func (c *Cluster) installDeviceClasses(ctx context.Context, root string) error {
	classes, err := c.env.DecodeFiles(filepath.Join(root, "deploy", "kustomize", "base", "dra", "deviceclasses.yaml"))
	if err != nil {
		return err
	}
	for _, o := range classes {
		if err := c.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("create DeviceClass %s: %w", o.GetName(), err)
		}
	}
	return nil
}
