package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/volcano"
)

func init() { register(newConvertCommand) }

func newConvertCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "convert",
		Short: "Convert Volcano objects into Tessera's",
	}
	unknownSubcommand(cmd)
	var opts volcano.Options
	v := &cobra.Command{
		Use:   "volcano FILE...",
		Short: "Convert Volcano Queues, PodGroups and Jobs (and Volcano-annotated batch Jobs) into Tessera's objects",
		Long: `Read Volcano objects from YAML files ("-" for standard input) and write Tessera's on
standard output: ` + volcano.Names() + `. Other objects pass through; other Volcano
kinds are left out. A Volcano Job of several tasks becomes one JobSet
(jobset.x-k8s.io/v1alpha2; the JobSet controller, v0.11 or later, must run on the
cluster) carrying its svc, ssh and env plugins, TaskCompleted: CompleteJob policies and
dependsOn, with a Secret and a ConfigMap for the plugins; --jobset=false writes a
PodGroup and a batch/v1 Job per task instead, as the simulator reads them. Every field
that cannot be carried over is noted on standard error with the object, the field and
what to do instead. Objects the API server would reject
(an apiVersion convert does not read, a number out of range, a gang larger than its
Job) are errors, and nothing is written.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var objs []*unstructured.Unstructured
			for _, f := range args {
				got, err := readObjects(cmd.InOrStdin(), f)
				if err != nil {
					return err
				}
				objs = append(objs, got...)
			}
			out, notes, err := volcano.Convert(objs, opts)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			for i, o := range out {
				b, err := yaml.Marshal(o)
				if err != nil {
					return err
				}
				if i > 0 {
					fmt.Fprintln(w, "---")
				}
				if _, err := w.Write(b); err != nil {
					return err
				}
			}
			for _, n := range notes {
				fmt.Fprintln(cmd.ErrOrStderr(), "note:", n.String())
			}
			return nil
		},
	}
	v.Flags().BoolVar(&opts.RewriteNvidiaGPU, "rewrite-nvidia-gpu", false, "turn nvidia.com/gpu requests into tessera.dev/gpu")
	v.Flags().BoolVar(&opts.JobSet, "jobset", true, "write a Volcano Job of several tasks as one JobSet; false: a PodGroup and a batch/v1 Job per task")
	cmd.AddCommand(exitCodes(v, nil, "1 is not used (what is not carried over is noted, and the output is still complete), 2 input it cannot convert (an empty or unreadable file, an object the API server would reject, bad flags)"))
	return cmd
}

// readObjects reads every object of a file ("-": in).
func readObjects(in io.Reader, path string) ([]*unstructured.Unstructured, error) {
	if path == "-" {
		return volcano.ReadFrom(in, "standard input")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return volcano.ReadFrom(f, path)
}
