package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/volcano"
)

func init() { register(newConvertCommand) }

func newConvertCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "convert",
		Short: "Convert Volcano objects into Tessera's",
	}
	var opts volcano.Options
	v := &cobra.Command{
		Use:   "volcano FILE...",
		Short: "Convert Volcano Queues, PodGroups and Jobs (and Volcano-annotated batch Jobs) into Tessera's objects",
		Long: `Read Volcano objects from YAML files ("-" for standard input) and write Tessera's on
standard output: ` + volcano.Names() + `. Other objects pass through. Every field that
cannot be carried over is noted on standard error with the object, the field and what
to do instead.`,
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
	cmd.AddCommand(v)
	return cmd
}

// readObjects reads every YAML document of a file ("-": in) as an object.
func readObjects(in io.Reader, path string) ([]*unstructured.Unstructured, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(in)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for i := 0; ; i++ {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: document %d: apiVersion and kind are required", path, i+1)
		}
		out = append(out, u)
	}
}
