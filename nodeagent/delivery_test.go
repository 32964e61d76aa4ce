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
	// deliver writes the toolkit's configuration, hands the agent one GPU and checks
	// how many GPUs its plugins advertise and what the gauge says; when names the case.
	deliver := func(toolkitConfig, when string, wantAdvertised int, wantRefused float64) {
		t.Helper()
		if err := os.WriteFile(config, []byte(toolkitConfig), 0o644); err != nil {
			t.Fatal(err)
		}
		a.setPluginGPUs([]tesserav1.GPUDevice{{UUID: "GPU-a", MemoryMiB: 81920, Healthy: true}})
		n := 0
		for _, p := range a.plugins {
			n += len(p.GPUs())
		}
		if n != wantAdvertised {
			t.Fatalf("%d GPUs advertised %s, want %d", n, when, wantAdvertised)
		}
		if v := testutil.ToFloat64(a.metrics.DeliveryRefusedGauge()); v != wantRefused {
			t.Fatalf("tessera_node_agent_gpu_delivery_refused = %v %s, want %v", v, when, wantRefused)
		}
	}

	deliver("disable-require = false\n", "while the toolkit takes env", 0, 1)
	for _, w := range []string{config, "accept-nvidia-visible-devices-envvar-when-unprivileged", "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false"} {
		if !strings.Contains(log.String(), w) {
			t.Errorf("log does not say %q:\n%s", w, log.String())
		}
	}

	deliver("accept-nvidia-visible-devices-envvar-when-unprivileged = false\naccept-nvidia-visible-devices-as-volume-mounts = true\n",
		"once locked down (1 per plugin)", 2, 0)
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
