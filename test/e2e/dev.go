package e2e

import (
	"context"
	"fmt"
)

// The cluster of `make dev-cluster`, which the user guide's pages are written for.
const (
	// DevNodes is how many fake GPU nodes it starts with.
	DevNodes = 4
	// DevGPUs is the simulated server of every node.
	DevGPUs = "dgxa100-80gb"
)

// StartDev brings up the cluster of `make dev-cluster` (test/e2e/devcluster), on which
// docs/getting-started.md runs: nodes fake GPU nodes of the simulated server gpus, whose
// MachineDeployment may shrink to one node (the example ScaleDownPolicy keeps 2), with
// the example configuration (gitops/clusters/example under the end-to-end overlay)
// committed and applied by Flux. It returns the cluster, to Stop even on an error, and
// the commit Flux applied.
func StartDev(ctx context.Context, nodes int, gpus string, logf func(format string, args ...any)) (*Cluster, string, error) {
	c, err := Start(ctx, Options{Nodes: nodes, MinNodes: 1, GPUs: gpus, Logf: logf})
	if err != nil {
		return c, "", err
	}
	overlay, err := ExampleOverlay()
	if err != nil {
		return c, "", err
	}
	rev, err := c.SyncExample(ctx, overlay)
	if err != nil {
		return c, "", fmt.Errorf("syncing the example configuration: %w", err)
	}
	return c, rev, nil
}
