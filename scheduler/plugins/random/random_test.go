package random_test

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/plugins/random"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func TestPlaceGPUs(t *testing.T) {
	n := testutil.MakeNode("n").GPUs(2, "A100-80GB").Obj()
	if gpus, score, ok := (random.Random{}).PlaceGPUs(testutil.MakeJob("j").GPU(2).Obj().Tasks[0], n); !ok || gpus.Len() != 2 || score != 0 {
		t.Fatalf("got %v %v %v", gpus.Indices(), score, ok)
	}
	if _, _, ok := (random.Random{}).PlaceGPUs(testutil.MakeJob("j").GPU(3).Obj().Tasks[0], n); ok {
		t.Fatal("3 GPUs on a 2-GPU node")
	}
	if gpus, score, ok := (random.Random{}).PlaceGPUs(testutil.MakeJob("j").Obj().Tasks[0], n); !ok || gpus != 0 || score != 0 {
		t.Fatalf("cpu only: %v %v %v", gpus.Indices(), score, ok)
	}
}
