package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tessera-gpu/tessera/internal/golden"
)

// cliReference is docs/reference/cli.md, generated from the commands themselves.
const cliReference = "../../docs/reference/cli.md"

// TestCLIReference keeps docs/reference/cli.md equal to what the commands declare:
// every command, its usage and every flag with its default and help. Regenerate it
// with `make generate` (TESSERA_UPDATE_REFERENCE=1).
func TestCLIReference(t *testing.T) {
	got := renderCLIReference(newRootCommand())
	golden.Check(t, cliReference, []byte(got))

}

func renderCLIReference(root *cobra.Command) string {
	var b bytes.Buffer
	b.WriteString("# Command reference\n\n<!-- Generated from the commands by `make generate`; do not edit. -->\n\n" +
		"Every command of `tessera` with its flags, as `--help` prints them. Exit codes, signals and the flag vocabulary: [../cli.md](../cli.md).\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n```\n%s\n```\n", c.CommandPath(), c.Short, c.UseLine())
		if c.Runnable() && c.Long != "" {
			fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(c.Long))
		}
		if fs := visibleFlags(c.NonInheritedFlags()); fs != "" {
			fmt.Fprintf(&b, "\n| flag | default | meaning |\n|---|---|---|\n%s", fs)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return b.String()
}

func visibleFlags(fs *pflag.FlagSet) string {
	var b strings.Builder
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		def := f.DefValue
		if def != "" {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, def, strings.ReplaceAll(f.Usage, "|", `\|`))
	})
	return b.String()
}
