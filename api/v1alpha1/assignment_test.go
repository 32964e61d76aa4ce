package v1alpha1

import (
	"strings"
	"testing"
)

func TestGPUAssignmentRoundTrip(t *testing.T) {
	in := GPUAssignment{Node: "n1", Containers: []ContainerGPUs{
		{Container: "train", UUIDs: []string{"GPU-a", "GPU-b"}},
		{Container: "probe", UUIDs: []string{"GPU-c"}, MemoryMiB: 4096},
	}}
	out, err := ParseGPUAssignment(in.Encode())
	if err != nil {
		t.Fatal(err)
	}
	c, ok := out.Container("probe")
	if !ok || c.MemoryMiB != 4096 || c.UUIDs[0] != "GPU-c" {
		t.Fatalf("probe: %+v %v", c, ok)
	}
}

func TestParseGPUAssignmentErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{`:                      "unexpected EOF",
		`{"containers":[]}`:      "node is empty",
		`{"node":"n","extra":1}`: "unknown field",
		`{"node":"n","containers":[{"container":"","uuids":["GPU-a"]}]}`:                          "containers[0].container is empty",
		`{"node":"n","containers":[{"container":"c","uuids":[]}]}`:                                "containers[0].uuids is empty",
		`{"node":"n","containers":[{"container":"c","uuids":["GPU-a","GPU-b"],"memoryMiB":100}]}`: "exactly one GPU",
		`{"node":"n","containers":[{"container":"c","uuids":["GPU-a"],"memoryMiB":-1}]}`:          "negative",
	} {
		if _, err := ParseGPUAssignment(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
}
