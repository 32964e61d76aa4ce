package clitest

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Reference renders a command reference page in Markdown: title, then intro, then every
// command of root (but help and completion) with its short help, usage line, long help
// and a table of its own flags with their defaults, as --help prints them.
func Reference(root *cobra.Command, title, intro string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n<!-- Generated from the commands by `make generate`; do not edit. -->\n\n%s\n", title, intro)
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
	return b.Bytes()
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
