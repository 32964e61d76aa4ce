package clitest

import (
	"bytes"

	"github.com/spf13/cobra"
)

// Execute runs root with the command line args and returns what it wrote to standard
// output and to standard error.
func Execute(root *cobra.Command, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}
