package main

import (
	"strings"
	"testing"
)

func TestFakeGPUs(t *testing.T) {
	if _, err := execute("node-agent", "--node-name", "n1", "--fake-gpus", "dgx9"); err == nil ||
		!strings.Contains(err.Error(), `--fake-gpus: unknown simulated node "dgx9": use one of dgxa100, dgxa100-80gb, dgxh100, pcie-a100`) {
		t.Fatalf("unknown --fake-gpus: got %v", err)
	}
	src, err := gpuSource("dgxa100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	inv, err := src.Inventory()
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Devices) != 8 || !strings.Contains(inv.Devices[0].Model, "80GB") {
		t.Fatalf("dgxa100-80gb: %d GPUs, first %+v", len(inv.Devices), inv.Devices[0])
	}
}
