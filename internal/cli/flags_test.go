package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestDeprecatedAlias(t *testing.T) {
	newCmd := func(got *string) *cobra.Command {
		cmd := &cobra.Command{Use: "x", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error { return nil }}
		cmd.Flags().StringVarP(got, "output", "o", "table", "format")
		DeprecatedAlias(cmd, "output", "format")
		return cmd
	}
	for _, c := range []struct {
		args       []string
		want       string
		deprecated bool
		err        string
	}{
		{nil, "table", false, ""},
		{[]string{"-o", "json"}, "json", false, ""},
		{[]string{"--format", "json"}, "json", true, ""},
		{[]string{"--format=json", "-o", "json"}, "json", true, ""},
		{[]string{"--format", "json", "-o", "table"}, "", true, "--format json was given too: --format is the deprecated name of --output; give only --output"},
		{[]string{"-o", "table", "--format", "json"}, "", false, "--output table was given too"},
	} {
		var got string
		cmd := newCmd(&got)
		var out, errOut bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(c.args)
		err := cmd.Execute()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: got %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v: %q (%v), want %q", c.args, got, err, c.want)
		}
		if d := strings.Contains(errOut.String(), "Flag --format has been deprecated, use --output"); d != c.deprecated || out.Len() > 0 {
			t.Errorf("%v: stdout %q, stderr %q", c.args, out.String(), errOut.String())
		}
	}
	var s string
	cmd := newCmd(&s)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil || strings.Contains(out.String(), "--format") {
		t.Errorf("help (%v) shows the alias:\n%s", err, out.String())
	}
}

func TestCheckBindAddress(t *testing.T) {
	for _, c := range []struct {
		addr string
		off  bool
		err  string
	}{
		{":8080", false, ""},
		{"127.0.0.1:0", false, ""},
		{"[::1]:9443", false, ""},
		{"0", true, ""},
		{"0", false, `--a "0": give HOST:PORT`},
		{":70000", true, `--a ":70000": port 70000 is out of range; give HOST:PORT (for example :8080) with a port up to 65535, or 0 to turn the endpoint off`},
		{"8080", false, `--a "8080": give HOST:PORT`},
		{":nosuchservice", false, `unknown port "nosuchservice"`},
	} {
		err := CheckBindAddress("a", c.addr, c.off)
		if (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q off=%t: got %v, want %q", c.addr, c.off, err, c.err)
		}
	}
	if err := CheckPort("port", 70000); err == nil || !strings.Contains(err.Error(), "--port 70000: out of range") {
		t.Errorf("port 70000: %v", err)
	}
}

func TestExitCodes(t *testing.T) {
	cmd := &cobra.Command{Use: "x", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error { return errors.New("failed") }}
	cmd.Flags().Int("n", 0, "a number")
	UsageErrors(cmd)
	for _, c := range []struct {
		args []string
		code int
	}{{nil, ExitFailure}, {[]string{"--n", "x"}, ExitUsage}, {[]string{"--nosuch"}, ExitUsage}, {[]string{"arg"}, ExitUsage}} {
		cmd.SetArgs(c.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		if got := ExitCode(cmd.Execute()); got != c.code {
			t.Errorf("%v: exit code %d, want %d", c.args, got, c.code)
		}
	}
	if ExitCode(nil) != 0 || ExitCode(fmt.Errorf("wrapped: %w", Usage(errors.New("x")))) != ExitUsage || Usage(nil) != nil {
		t.Error("ExitCode")
	}
}
