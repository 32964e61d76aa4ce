package autoscale

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText prints one line per GPU node: whether it is a candidate, and why or why not.
func (p *Plan) WriteText(w io.Writer) error {
	dry := ""
	if p.DryRun {
		dry = " (dryRun: reports only)"
	}
	fmt.Fprintf(w, "ScaleDownPolicy %s%s\n", p.Policy, dry)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tGPUS\tCANDIDATE\tREASON\tWHY")
	for _, d := range p.Nodes {
		gpus := fmt.Sprintf("%d", d.GPUs)
		if d.GPUModel != "" {
			gpus += " x " + d.GPUModel
		}
		cand, reason := "no", d.Reason
		if d.Candidate {
			cand, reason = "yes", d.Method
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Node, gpus, cand, reason, d.Message)
	}
	return tw.Flush()
}
