package main

import (
	"testing"

	"github.com/tessera-gpu/tessera/internal/cli/clitest"
	"github.com/tessera-gpu/tessera/internal/golden"
)

// cliReference is docs/reference/cli.md, generated from the commands themselves.
const cliReference = "../../docs/reference/cli.md"

// TestCLIReference keeps docs/reference/cli.md equal to what the commands declare:
// every command, its usage and every flag with its default and help. Regenerate it
// with `make generate` (TESSERA_UPDATE_REFERENCE=1).
func TestCLIReference(t *testing.T) {
	golden.Check(t, cliReference, clitest.Reference(newRootCommand(), "Command reference",
		"Every command of `tessera` with its flags, as `--help` prints them; the node agent's own binary: "+
			"[tessera-node-agent](node-agent.md). Exit codes, signals and the flag vocabulary: [../cli.md](../cli.md)."))
}
