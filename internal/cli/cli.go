// Package cli holds what Tessera's two binaries (tessera and tessera-node-agent) share
// in their command lines: the version subcommand and flag, plain boolean flags in help,
// deprecated flag aliases and checks of address flags, exit codes (0 success, 1
// failure, 2 unusable input) and the shutdown on SIGINT and SIGTERM.
package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tessera-gpu/tessera/internal/version"
)

// AddVersion gives root a --version flag (long only: -v is the log level everywhere)
// and a version subcommand, both printing the same line (internal/version).
func AddVersion(root *cobra.Command) {
	root.Version = version.String()
	root.SetVersionTemplate("{{.Version}}\n")
	root.Flags().Bool("version", false, "print the version")
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version.String())
		},
	})
}

// PlainBoolFlags makes every boolean flag of cmd and its subcommands print as
// "--name" in help, without pflag's "[=true|false]"; --name=false still works.
// Call it once every flag and subcommand is defined.
func PlainBoolFlags(cmd *cobra.Command) {
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.PersistentFlags()} {
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() == "bool" {
				if _, plain := f.Value.(plainBool); !plain {
					f.Value, f.NoOptDefVal = plainBool{f.Value}, "true"
				}
			}
		})
	}
	for _, c := range cmd.Commands() {
		PlainBoolFlags(c)
	}
}

// plainBool hides a boolean flag value's IsBoolFlag, which makes pflag print
// "[=true|false]"; NoOptDefVal "true" keeps "--name" meaning true.
type plainBool struct{ pflag.Value }
