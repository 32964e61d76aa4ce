package nodeagent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/nodeagent/deviceplugin"
)

// The agent hands out no GPU, through either device plugin, while the NVIDIA container
// toolkit takes device lists from a pod's own NVIDIA_VISIBLE_DEVICES: it says so in its
// log (the file, the key and the fix) and in tessera_node_agent_gpu_delivery_refused.
// Locking the toolkit down takes effect at the next sample.
func TestGPUDeliveryRefusedUntilToolkitLockedDown(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	write := func(data string) {
		if err := os.WriteFile(config, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log strings.Builder
	a, err := New(Config{NodeName: "n1", DevicePluginDir: dir, SlicesPerGPU: 4, ToolkitConfig: config},
		Deps{Registry: prometheus.NewRegistry(), Pods: deviceplugin.KubePods{},
			Log: funcr.New(func(prefix, args string) { log.WriteString(args + "\n") }, funcr.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.plugins) != 2 {
		t.Fatalf("%d device plugins, want tessera.dev/gpu and tessera.dev/gpu-slice", len(a.plugins))
	}
	devs := []tesserav1.GPUDevice{{UUID: "GPU-a", MemoryMiB: 81920, Healthy: true}}
	advertised := func() (n int) {
		for _, p := range a.plugins {
			n += len(p.GPUs())
		}
		return n
	}

	write("disable-require = false\n")
	a.setPluginGPUs(devs)
	if n := advertised(); n != 0 {
		t.Fatalf("%d GPUs advertised while the toolkit takes env", n)
	}
	if v := testutil.ToFloat64(a.metrics.DeliveryRefusedGauge()); v != 1 {
		t.Fatalf("tessera_node_agent_gpu_delivery_refused = %v, want 1", v)
	}
	for _, w := range []string{config, "accept-nvidia-visible-devices-envvar-when-unprivileged", "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false"} {
		if !strings.Contains(log.String(), w) {
			t.Errorf("log does not say %q:\n%s", w, log.String())
		}
	}

	write("accept-nvidia-visible-devices-envvar-when-unprivileged = false\naccept-nvidia-visible-devices-as-volume-mounts = true\n")
	a.setPluginGPUs(devs)
	if n := advertised(); n != 2 {
		t.Fatalf("%d GPUs advertised once locked down, want 1 per plugin", n)
	}
	if v := testutil.ToFloat64(a.metrics.DeliveryRefusedGauge()); v != 0 {
		t.Fatalf("tessera_node_agent_gpu_delivery_refused = %v, want 0", v)
	}
}

// --unsafe-skip-toolkit-check hands GPUs out without a toolkit configuration.
func TestSkipToolkitCheck(t *testing.T) {
	dir := t.TempDir()
	a, err := New(Config{NodeName: "n1", DevicePluginDir: dir, ToolkitConfig: filepath.Join(dir, "none.toml"), SkipToolkitCheck: true},
		Deps{Registry: prometheus.NewRegistry(), Pods: deviceplugin.KubePods{}, Log: funcr.New(func(string, string) {}, funcr.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	a.setPluginGPUs([]tesserav1.GPUDevice{{UUID: "GPU-a", MemoryMiB: 1, Healthy: true}})
	if n := len(a.plugins[0].GPUs()); n != 1 || testutil.ToFloat64(a.metrics.DeliveryRefusedGauge()) != 0 {
		t.Fatalf("%d GPUs advertised with the check skipped", n)
	}
}
