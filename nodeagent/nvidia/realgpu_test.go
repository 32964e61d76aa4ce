//go:build gpu

package nvidia_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/nodeagent/gpu"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia"
)

// TestRealGPUMatchesNvidiaSMI runs discovery and sampling on the machine's real GPUs and
// compares them with nvidia-smi. Run it with hack/gpu-check.sh on a GPU machine.
func TestRealGPUMatchesNvidiaSMI(t *testing.T) {
	src := nvidia.NewSystem()
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	defer src.Shutdown()
	inv, err := src.Inventory()
	if err != nil {
		t.Fatal(err)
	}
	samples, err := src.Sample()
	if err != nil {
		t.Fatal(err)
	}
	rows := smi(t, "--query-gpu=index,uuid,name,memory.total,pci.bus_id,mig.mode.current,utilization.gpu,memory.used,temperature.gpu,driver_version", "--format=csv,noheader,nounits")
	if len(rows) != len(inv.Devices) {
		t.Fatalf("nvidia-smi lists %d GPUs, discovery %d", len(rows), len(inv.Devices))
	}
	for i, r := range rows {
		d, s := inv.Devices[i], samples[i]
		t.Logf("GPU %d: discovery %+v", i, d)
		t.Logf("GPU %d: sample util %d%% used %d MiB temp %d C processes %+v", i, s.UtilizationPercent, s.MemoryUsedBytes>>20, s.TemperatureC, s.Processes)
		t.Logf("GPU %d: nvidia-smi %v", i, r)
		check := func(field, got, want string) {
			if got != want {
				t.Errorf("GPU %d %s: discovery %q, nvidia-smi %q", i, field, got, want)
			}
		}
		check("index", strconv.Itoa(d.Index), r[0])
		check("uuid", d.UUID, r[1])
		check("model", d.Model, r[2])
		check("memory MiB", strconv.FormatInt(d.MemoryMiB, 10), r[3])
		check("pci bus id", d.PCIBusID, strings.ToLower(normalize(r[4])))
		check("MIG", strconv.FormatBool(d.MIGEnabled), strconv.FormatBool(r[5] == "Enabled"))
		check("driver", inv.DriverVersion, r[9])
		if !d.Healthy {
			t.Errorf("GPU %d unhealthy: %s", i, d.UnhealthyReason)
		}
		near(t, i, "utilization %", s.UtilizationPercent, atoi(r[6]), 30)
		near(t, i, "memory used MiB", int(s.MemoryUsedBytes>>20), atoi(r[7]), 512)
		near(t, i, "temperature C", s.TemperatureC, atoi(r[8]), 5)
		if b, err := os.ReadFile(filepath.Join("/sys/bus/pci/devices", d.PCIBusID, "numa_node")); err == nil {
			want := atoi(strings.TrimSpace(string(b)))
			if want >= 0 && d.NUMANode != want {
				t.Errorf("GPU %d NUMA node: discovery %d, sysfs %d", i, d.NUMANode, want)
			}
		}
	}
	if m := regexp.MustCompile(`CUDA Version: (\d+\.\d+)`).FindStringSubmatch(string(run(t, "nvidia-smi"))); m != nil && m[1] != inv.CUDAVersion {
		t.Errorf("CUDA version: discovery %s, nvidia-smi %s", inv.CUDAVersion, m[1])
	}
	islands := gpu.Islands(inv.Devices, inv.Links)
	for _, l := range inv.Links {
		t.Logf("link %d-%d: %d NVLinks, PCIe %s", l.A, l.B, l.NVLinks, l.PCIe)
	}
	t.Logf("islands: %v", islands)
	t.Logf("nvidia-smi topo -m (compare NV# with the NVLinks above):\n%s", run(t, "nvidia-smi", "topo", "-m"))
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return out
}

func smi(t *testing.T, args ...string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(run(t, "nvidia-smi", args...))), "\n") {
		var r []string
		for _, f := range strings.Split(line, ",") {
			r = append(r, strings.TrimSpace(f))
		}
		rows = append(rows, r)
	}
	return rows
}

// normalize shortens nvidia-smi's 8-digit PCI domain to 4 digits, as discovery reports it.
func normalize(id string) string {
	if dom, rest, ok := strings.Cut(id, ":"); ok && len(dom) > 4 {
		return dom[len(dom)-4:] + ":" + rest
	}
	return id
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func near(t *testing.T, i int, what string, got, want, tol int) {
	t.Helper()
	if want < 0 {
		return // [N/A] in nvidia-smi
	}
	if got < want-tol || got > want+tol {
		t.Errorf("GPU %d %s: discovery %d, nvidia-smi %d (tolerance %d)", i, what, got, want, tol)
	}
}
