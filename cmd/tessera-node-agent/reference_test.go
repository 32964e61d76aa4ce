package main

import (
	"testing"

	"github.com/tessera-gpu/tessera/internal/cli/clitest"
	"github.com/tessera-gpu/tessera/internal/golden"
)

// TestCLIReference keeps docs/reference/node-agent.md equal to the node agent's
// command line. Regenerate it with `make generate` (TESSERA_UPDATE_REFERENCE=1).
func TestCLIReference(t *testing.T) {
	t.Setenv("NODE_NAME", "") // --node-name's default
	golden.Check(t, "../../docs/reference/node-agent.md", clitest.Reference(newRootCommand(), "tessera-node-agent reference",
		"The node agent's binary (a DaemonSet on GPU nodes, its own image) with its flags, as `--help` prints them; "+
			"every other command: [cli.md](cli.md). Exit codes, signals and the flag vocabulary: [../cli.md](../cli.md)."))
}
