package trace

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestWithGPUSpec constrains openb default like gpuspec20: the chosen share of GPU pods
// carry a constraint, each one that gpuspec20 gives a pod of its kind, and nothing else
// changes.
func TestWithGPUSpec(t *testing.T) {
	pods, err := ReadPodsCSV(filepath.Join(openbDir, "openb_pod_list_default.csv"))
	if err != nil {
		t.Fatal(err)
	}
	like, err := ReadPodsCSV(filepath.Join(openbDir, "openb_pod_list_gpuspec20.csv"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]string]bool{}
	for _, p := range like {
		if p.GPUModels != nil {
			seen[[2]string{kindName(p), strings.Join(p.GPUModels, "|")}] = true
		}
	}
	for _, share := range []float64{0.05, 0.33, 0.5} {
		out := WithGPUSpec(pods, like, share, 1)
		gpu, constrained := 0, 0
		for i, p := range out {
			if p.GPUModels != nil {
				constrained++
				if !seen[[2]string{kindName(p), strings.Join(p.GPUModels, "|")}] {
					t.Fatalf("%s: constraint %v never given to a %s pod in gpuspec20", p.Name, p.GPUModels, kindName(p))
				}
			}
			if p.NumGPU > 0 {
				gpu++
			}
			p.GPUModels = nil
			if !reflect.DeepEqual(p, pods[i]) {
				t.Fatalf("pod %d changed beyond its constraint: %+v", i, p)
			}
		}
		if want := int(share*float64(gpu) + 0.5); constrained != want {
			t.Errorf("share %.2f: %d of %d GPU pods constrained, want %d", share, constrained, gpu, want)
		}
	}
	if !reflect.DeepEqual(WithGPUSpec(pods, like, 0.33, 1), WithGPUSpec(pods, like, 0.33, 1)) {
		t.Error("same seed, different lists")
	}
}

func kindName(p PodSpec) string {
	switch {
	case p.IsShare():
		return "share"
	case p.NumGPU == 1:
		return "one-GPU"
	}
	return "multi-GPU"
}
