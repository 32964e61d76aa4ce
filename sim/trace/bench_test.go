package trace

import (
	"path/filepath"
	"testing"
)

func BenchmarkReadPodsCSV(b *testing.B) {
	path := filepath.Join(openbDir, "openb_pod_list_default.csv")
	for b.Loop() {
		if _, err := ReadPodsCSV(path); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFillUp(b *testing.B) {
	pods, err := ReadPodsCSV(filepath.Join(openbDir, "openb_pod_list_default.csv"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		FillUp(pods, 6212*1000, 1.3, 42)
	}
}

func BenchmarkTypicalShapes(b *testing.B) {
	pods, err := ReadPodsCSV(filepath.Join(openbDir, "openb_pod_list_default.csv"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		TypicalShapes(pods, 0.95)
	}
}
