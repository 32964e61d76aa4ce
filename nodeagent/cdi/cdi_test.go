package cdi

import (
	"os"
	"slices"
	"strings"
	"testing"

	specs "tags.cncf.io/container-device-interface/specs-go"
)

func TestWriteReadRemove(t *testing.T) {
	w := Writer{Dir: t.TempDir()}
	dev := specs.Device{Name: "uid-1-gpu-gpu-0", ContainerEdits: specs.ContainerEdits{Env: []string{"A=1"},
		Mounts: []*specs.Mount{{HostPath: "/tmp/nvidia-mps", ContainerPath: "/tmp/nvidia-mps"}}}}
	for range 2 { // idempotent
		if err := w.Write("uid-1", []specs.Device{dev}); err != nil {
			t.Fatal(err)
		}
	}
	spec, err := w.Read("uid-1")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Kind != ClaimKind || spec.Version == "" || len(spec.Devices) != 1 || !slices.Equal(spec.Devices[0].ContainerEdits.Env, []string{"A=1"}) {
		t.Fatalf("spec %+v", spec)
	}
	entries, _ := os.ReadDir(w.Dir)
	if len(entries) != 1 || entries[0].Name() != "tessera.dev-claim_uid-1.json" {
		t.Fatalf("directory holds %v, want the one spec file", entries)
	}
	if got := QualifiedName(dev.Name); got != "tessera.dev/claim=uid-1-gpu-gpu-0" {
		t.Errorf("QualifiedName = %q", got)
	}
	for range 2 {
		if err := w.Remove("uid-1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(w.Path("uid-1")); !os.IsNotExist(err) {
		t.Fatalf("spec still there: %v", err)
	}
}

func TestWriteRejectsBadNames(t *testing.T) {
	w := Writer{Dir: t.TempDir()}
	if err := w.Write("u", []specs.Device{{Name: "a/b"}}); err == nil || !strings.Contains(err.Error(), `CDI device name "a/b"`) {
		t.Fatalf("got %v", err)
	}
	if err := w.Write("u", nil); err == nil {
		t.Fatal("empty spec written")
	}
}
