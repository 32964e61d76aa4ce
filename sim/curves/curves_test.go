package curves

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/tessera-gpu/tessera/internal/tracearchive"
)

// The genai2026 archives, as the repository ships them: the duty cycle in the
// autoscaler's testdata, the memory series in the chart tests'.
const (
	dutyArchive   = "../../autoscale/testdata/pod_gpu_duty_cycle_anon.tar.gz"
	memoryArchive = "../../test/chart/testdata/genai2026/pod_gpu_memory_used_bytes_anon.tar.gz"
)

// TestTableMatchesArchives derives the curves from the archives again and compares
// them with the embedded table.
func TestTableMatchesArchives(t *testing.T) {
	m, err := tracearchive.ReadCSV(memoryArchive)
	if err != nil {
		t.Fatal(err)
	}
	d, err := tracearchive.ReadCSV(dutyArchive)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Derive(m, d)
	if err != nil {
		t.Fatal(err)
	}
	if got := GenAI(); !reflect.DeepEqual(got, want) {
		t.Fatalf("genai2026.txt holds %d curves that differ from the %d the archives give; run go generate ./sim/curves", len(got), len(want))
	}
}

func TestTable(t *testing.T) {
	cs := GenAI()
	if len(cs) < 100 {
		t.Fatalf("%d curves, want the pods of the trace covering %d steps or more (over 100)", len(cs), MinSteps)
	}
	idle := 0
	for _, c := range cs {
		if len(c.MemoryMiB) < MinSteps || len(c.Utilization) != len(c.MemoryMiB) {
			t.Fatalf("pod %s: %d memory and %d utilisation steps", c.Pod, len(c.MemoryMiB), len(c.Utilization))
		}
		if p := c.Peak(); p > 48*1024 {
			t.Errorf("pod %s peaks at %d MiB; the trace's largest peak is about 47 GiB", c.Pod, p)
		}
		if c.Utilization[0] <= 1 {
			idle++
		}
	}
	if idle == 0 {
		t.Error("no pod starts idle; the trace has pods that hold a GPU and leave it idle")
	}
	var b bytes.Buffer
	if err := Write(&b, cs); err != nil {
		t.Fatal(err)
	}
	if again, err := Parse(&b); err != nil || !reflect.DeepEqual(again, cs) {
		t.Fatalf("the table does not read back as written: %v", err)
	}
}

func TestParseRejectsBadLines(t *testing.T) {
	for _, in := range []string{"p m 1 2 u 3\n", "p u 1 m 2\n", "p m x u 1\n", "p m u\n"} {
		if _, err := Parse(bytes.NewBufferString(in)); err == nil {
			t.Errorf("%q read without an error", in)
		}
	}
}
