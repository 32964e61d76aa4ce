package leastallocated_test

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/plugins/leastallocated"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func TestScoreNode(t *testing.T) {
	const gib = int64(1) << 30
	n := testutil.MakeNode("n").Obj()
	n.Used.MilliCPU, n.Used.Memory = 32000, 256*gib
	tests := []struct {
		cpu, mem int64
		want     float64
	}{
		{16000, 128 * gib, 62.5},   // cpu 80/128 free, memory 640/1024 free
		{0, 0, (75 + 75) / 2},      // nothing asked: what is free now
		{100000, 128 * gib, 31.25}, // cpu does not fit: 0 for cpu
	}
	for _, tc := range tests {
		task := testutil.MakeJob("j").CPU(tc.cpu).Memory(tc.mem).Obj().Tasks[0]
		if got := (leastallocated.LeastAllocated{}).ScoreNode(task, n); got != tc.want {
			t.Errorf("cpu %d memory %d: score %v, want %v", tc.cpu, tc.mem, got, tc.want)
		}
	}
}
