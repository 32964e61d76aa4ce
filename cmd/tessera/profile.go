package main

import (
	"github.com/spf13/cobra"

	"github.com/tessera-gpu/tessera/internal/cli"
)

// profileFlag declares --profile, the built-in scheduler profile (scheduler.Profile) or
// comma-separated profiles, into p with default def, and --policy, its former name, as a
// deprecated alias of the same value: help does not list --policy, and using it prints
// a notice on stderr. Giving both with different values is an error.
func profileFlag(cmd *cobra.Command, p *string, def, usage string) {
	cmd.Flags().StringVar(p, "profile", def, usage)
	cli.DeprecatedAlias(cmd, "profile", "policy")
}
