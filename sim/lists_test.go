package sim

import (
	"slices"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/sim/report"
)

// The published figures ship in the binary, name only lists the simulator has, and
// reach fill-up results of those lists at the protocol's arrivals only.
func TestPublishedFigures(t *testing.T) {
	if v, ok := PublishedUnallocated("default", "fgd"); !ok || v != 4.77 {
		t.Errorf("default fgd: %v %v, want 4.77", v, ok)
	}
	if _, ok := PublishedUnallocated("default", "tessera"); ok {
		t.Error("a published figure for tessera")
	}
	for k := range publishedFGD() {
		if !slices.Contains(OpenbVariants(), k[0]) {
			t.Errorf("published figures for %q, a pod list the simulator lacks", k[0])
		}
	}
	fill := func() []report.Result {
		return []report.Result{{Policy: "bestfit", Trace: "openb-cpu050"}, {Policy: "tessera", Trace: "openb-cpu050"}}
	}
	rs := fill()
	addPublished(Options{Trace: "cpu050", Arrive: PublishedArrive}, rs)
	if rs[0].PublishedUnallocatedPctAt100 == nil || *rs[0].PublishedUnallocatedPctAt100 != 6.44 || rs[1].PublishedUnallocatedPctAt100 != nil {
		t.Errorf("cpu050: %v %v", rs[0].PublishedUnallocatedPctAt100, rs[1].PublishedUnallocatedPctAt100)
	}
	for _, o := range []Options{{Trace: "cpu050", Arrive: 1.1}, {PodsFile: "p.csv", Arrive: PublishedArrive}, {Trace: "cpu050", Arrive: PublishedArrive, Mode: ModeReplay}} {
		rs := fill()
		if addPublished(o, rs); rs[0].PublishedUnallocatedPctAt100 != nil {
			t.Errorf("%+v: a published figure", o)
		}
	}
}

// Several pod lists: every name is checked before anything runs.
func TestRunListsChecksNames(t *testing.T) {
	for in, want := range map[string]string{
		"default,nosuch":   `unknown openb pod list "nosuch"`,
		"default,,cpu050":  "an empty pod list name",
		"default, default": "default is named twice",
	} {
		_, err := Run(Options{Trace: in, Seeds: 1, Arrive: PublishedArrive})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--trace %s: %v, want %q", in, err, want)
		}
	}
}
