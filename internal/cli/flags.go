package cli

import (
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// DeprecatedAlias declares alias as the deprecated, hidden former name of cmd's flag
// name (a string-valued flag, declared before): both set the same value, alias with a
// notice on the command's stderr; both given with different values is an error.
func DeprecatedAlias(cmd *cobra.Command, name, alias string) {
	fs := cmd.Flags()
	f := fs.Lookup(name)
	if f == nil {
		panic("cli.DeprecatedAlias: no flag --" + name)
	}
	by := new(string)
	f.Value = &aliasValue{Value: f.Value, flag: name, name: name, alias: alias, by: by}
	fs.Var(&aliasValue{Value: f.Value.(*aliasValue).Value, flag: alias, name: name, alias: alias, by: by}, alias, f.Usage)
	if err := fs.MarkDeprecated(alias, "use --"+name); err != nil {
		panic(err)
	}
	// pflag writes the notice to the flag set's output, which cobra prints to the
	// command's stdout when one is set: it would end up in JSON output.
	fs.SetOutput(stderrOf{cmd})
}

// aliasValue is the value of flag, which is either name or its deprecated alias; by
// remembers which of them set it.
type aliasValue struct {
	pflag.Value
	flag, name, alias string
	by                *string
}

func (v *aliasValue) Set(s string) error {
	if *v.by != "" && *v.by != v.flag && s != v.Value.String() {
		return fmt.Errorf("--%s %s was given too: --%s is the deprecated name of --%s; give only --%s", *v.by, v.Value.String(), v.alias, v.name, v.name)
	}
	*v.by = v.flag
	return v.Value.Set(s)
}

// stderrOf writes to the command's stderr, looked up at each write.
type stderrOf struct{ cmd *cobra.Command }

func (w stderrOf) Write(b []byte) (int, error) { return w.cmd.ErrOrStderr().Write(b) }

// CheckBindAddress checks a listen address flag: HOST:PORT with a port from 0 to 65535
// (or a service name), or "0" (or empty) for no endpoint when off is true.
func CheckBindAddress(flag, addr string, off bool) error {
	if off && (addr == "0" || addr == "") {
		return nil
	}
	how := "give HOST:PORT (for example :8080) with a port up to 65535"
	if off {
		how += ", or 0 to turn the endpoint off"
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--%s %q: %s", flag, addr, how)
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 0 || n > 65535 {
			return fmt.Errorf("--%s %q: port %d is out of range; %s", flag, addr, n, how)
		}
		return nil
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("--%s %q: unknown port %q; %s", flag, addr, port, how)
	}
	return nil
}

// CheckPort checks a port flag: 1 to 65535.
func CheckPort(flag string, port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("--%s %d: out of range; use a port from 1 to 65535", flag, port)
	}
	return nil
}
