package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// profileFlag declares --profile, the built-in scheduler profile (scheduler.Profile) or
// comma-separated profiles, into p with default def, and --policy, its former name, as a
// deprecated alias of the same value: help does not list --policy, and using it prints
// a notice on stderr. Giving both with different values is an error.
func profileFlag(cmd *cobra.Command, p *string, def, usage string) {
	fs := cmd.Flags()
	*p = def
	by := new(string)
	fs.Var(&profileValue{name: "profile", p: p, by: by}, "profile", usage)
	fs.Var(&profileValue{name: "policy", p: p, by: by}, "policy", usage)
	if err := fs.MarkDeprecated("policy", "use --profile"); err != nil {
		panic(err)
	}
	// pflag writes the notice to the flag set's output, which cobra prints to the
	// command's stdout when one is set: it would end up in JSON output.
	fs.SetOutput(stderrOf{cmd})
}

// profileValue is --profile's or --policy's value; both write p, and by remembers which
// of them did.
type profileValue struct {
	name string
	p    *string
	by   *string
}

func (v *profileValue) Set(s string) error {
	if *v.by != "" && *v.by != v.name && s != *v.p {
		return fmt.Errorf("--%s %s was given too: --policy is the deprecated name of --profile; give only --profile", *v.by, *v.p)
	}
	*v.by, *v.p = v.name, s
	return nil
}

func (v *profileValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v *profileValue) Type() string { return "string" }

// stderrOf writes to the command's stderr, looked up at each write.
type stderrOf struct{ cmd *cobra.Command }

func (w stderrOf) Write(b []byte) (int, error) { return w.cmd.ErrOrStderr().Write(b) }
