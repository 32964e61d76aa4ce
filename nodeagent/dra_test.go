package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tessera-gpu/tessera/nodeagent/dra"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia/nvidiatest"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// startDRA runs an agent with MPS on and DRA auto (the API server serves
// resource.k8s.io/v1, so it is on), its kubelet plugin in a temporary directory.
func startDRA(t *testing.T, node string, gpus *nvidiatest.Node) *harness {
	t.Helper()
	cfg := Config{NodeName: node, SampleInterval: 50 * time.Millisecond, ProcRoot: t.TempDir(),
		RetryMin: 200 * time.Millisecond, RetryMax: 400 * time.Millisecond}
	withDRA(t, &cfg)
	return startConfig(t, env.Config, cfg, gpus)
}

// withDRA sets cfg up for MPS and DRA auto, the kubelet plugin's directories temporary.
func withDRA(t *testing.T, cfg *Config) {
	t.Helper()
	if env == nil {
		testenv.SkipOrFail(t, fmt.Errorf("no API server"))
	}
	root, err := os.MkdirTemp("", "dra") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	registry := filepath.Join(root, "registry")
	if err := os.Mkdir(registry, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.SkipToolkitCheck, cfg.MPS, cfg.DRA = true, true, DRAAuto
	cfg.CDISpecDir, cfg.KubeletPluginsDir, cfg.KubeletRegistryDir = filepath.Join(root, "cdi"), filepath.Join(root, "plugins"), registry
}

// poolDevices returns the devices of the node's pool once check accepts them.
func (h *harness) poolDevices(t *testing.T, what string, check func([]resourceapi.Device) string) []resourceapi.Device {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	var devices []resourceapi.Device
	eventually(t, what, func() string {
		list, err := kube.ResourceV1().ResourceSlices().List(h.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		devices = nil
		for _, s := range list.Items {
			if s.Spec.Driver == dra.DriverName && s.Spec.Pool.Name == h.node {
				if s.Spec.NodeName == nil || *s.Spec.NodeName != h.node {
					return fmt.Sprintf("slice %s: nodeName %v, want %s", s.Name, s.Spec.NodeName, h.node)
				}
				devices = append(devices, s.Spec.Devices...)
			}
		}
		if len(devices) == 0 {
			return "no ResourceSlice for the node's pool"
		}
		return check(devices)
	})
	return devices
}

// sharingDevices lists the devices published for sharing: allowMultipleAllocations, the
// sharing attribute and a request policy on memory, all three or none.
func sharingDevices(devices []resourceapi.Device) ([]string, string) {
	var out []string
	for _, d := range devices {
		multi := d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
		attr := d.Attributes[dra.AttrSharing].BoolValue
		policy := d.Capacity[dra.CapacityMemory].RequestPolicy != nil
		if attr == nil || *attr != multi || policy != multi {
			return nil, fmt.Sprintf("%s: allowMultipleAllocations %v, sharing %v, request policy %v: want all or none", d.Name, multi, attr, policy)
		}
		if multi {
			out = append(out, d.Name)
		}
	}
	return out, ""
}

// attributes renders d's attributes as name=value.
func attributes(d resourceapi.Device) string {
	var out []string
	for name, a := range d.Attributes {
		v := "?"
		switch {
		case a.StringValue != nil:
			v = *a.StringValue
		case a.IntValue != nil:
			v = fmt.Sprint(*a.IntValue)
		case a.BoolValue != nil:
			v = fmt.Sprint(*a.BoolValue)
		case a.VersionValue != nil:
			v = *a.VersionValue
		}
		out = append(out, string(name)+"="+v)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func TestDRAPublishesResourceSlices(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gpus    func() *nvidiatest.Node
		memory  string
		model   string
		islands []int64
		numa    []int64
	}{
		{"dgxa100", nvidiatest.DGXA100, "40Gi", "Mock NVIDIA A100-SXM4-40GB", []int64{0, 0, 0, 0, 0, 0, 0, 0}, []int64{0, 0, 0, 0, 1, 1, 1, 1}},
		{"pcie-a100", nvidiatest.PCIeA100, "80Gi", "NVIDIA A100-PCIE-80GB", []int64{0, 0, 1, 1}, []int64{0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gpus := tc.gpus()
			gpus.SetComputeMode(1, nvml.COMPUTEMODE_EXCLUSIVE_PROCESS)
			h := startDRA(t, "dra-"+tc.name, gpus)
			devices := h.poolDevices(t, "the node's GPUs published", func(devices []resourceapi.Device) string {
				if len(devices) != len(tc.islands) {
					return fmt.Sprintf("%d devices, want %d", len(devices), len(tc.islands))
				}
				return ""
			})
			for i, d := range devices {
				if d.Name != dra.DeviceName(i) {
					t.Fatalf("device %d is %s, want %s", i, d.Name, dra.DeviceName(i))
				}
				str := func(name resourceapi.QualifiedName) string {
					if v := d.Attributes[name].StringValue; v != nil {
						return *v
					}
					return "<none>"
				}
				num := func(name resourceapi.QualifiedName) int64 {
					if v := d.Attributes[name].IntValue; v != nil {
						return *v
					}
					return -1
				}
				mode := "Default"
				if i == 1 {
					mode = "ExclusiveProcess"
				}
				if str(dra.AttrUUID) != gpus.UUID(i) || num(dra.AttrIndex) != int64(i) || str(dra.AttrModel) != tc.model ||
					str(dra.AttrPCIBusID) == "<none>" || str("resource.kubernetes.io/pciBusID") != str(dra.AttrPCIBusID) ||
					num(dra.AttrNUMANode) != tc.numa[i] || num("resource.kubernetes.io/numaNode") != tc.numa[i] ||
					num(dra.AttrNVLinkIsland) != tc.islands[i] || str(dra.AttrComputeMode) != mode ||
					d.Attributes[dra.AttrComputeCapability].VersionValue == nil || *d.Attributes[dra.AttrComputeCapability].VersionValue != "8.0.0" ||
					d.Attributes[dra.AttrMIGCapable].BoolValue == nil || !*d.Attributes[dra.AttrMIGCapable].BoolValue {
					t.Errorf("%s: attributes %s", d.Name, attributes(d))
				}
				memory := d.Capacity[dra.CapacityMemory]
				if memory.Value.Cmp(resource.MustParse(tc.memory)) != 0 {
					t.Errorf("%s: memory %s, want %s", d.Name, memory.Value.String(), tc.memory)
				}
				if len(d.Taints) != 0 {
					t.Errorf("%s: healthy GPU tainted %v", d.Name, d.Taints)
				}
			}
			// MPS is on: the GPU in EXCLUSIVE_PROCESS mode alone is shared, by steps of 1Gi up
			// to the whole GPU, which a request that names no memory takes.
			if shared, msg := sharingDevices(devices); msg != "" || !slices.Equal(shared, []string{"gpu-1"}) {
				t.Fatalf("shared devices %v (%s), want gpu-1", shared, msg)
			}
			rp := devices[1].Capacity[dra.CapacityMemory].RequestPolicy
			whole := resource.MustParse(tc.memory)
			if rp.Default.Cmp(whole) != 0 || rp.ValidRange == nil || rp.ValidRange.Min.String() != "1Gi" || rp.ValidRange.Step.String() != "1Gi" ||
				rp.ValidRange.Max.Cmp(whole) != 0 {
				t.Errorf("request policy default %v, range %+v: want default = max = %s, min = step = 1Gi", rp.Default, rp.ValidRange, tc.memory)
			}

			// nvidia-smi -c changes compute modes: the pool follows without a restart.
			gpus.SetComputeMode(1, nvml.COMPUTEMODE_DEFAULT)
			gpus.SetComputeMode(0, nvml.COMPUTEMODE_EXCLUSIVE_PROCESS)
			h.poolDevices(t, "republished after the compute mode changed", func(devices []resourceapi.Device) string {
				if shared, msg := sharingDevices(devices); msg != "" || !slices.Equal(shared, []string{"gpu-0"}) {
					return fmt.Sprintf("shared devices %v (%s), want gpu-0", shared, msg)
				}
				if m := devices[1].Attributes[dra.AttrComputeMode].StringValue; m == nil || *m != "Default" {
					return fmt.Sprintf("gpu-1's compute mode %v", m)
				}
				return ""
			})

			// A GPU that fell off the bus stays in the pool, tainted: claims that hold it keep
			// their device, no new claim gets it.
			gpus.Lose(2)
			h.poolDevices(t, "lost GPU tainted", func(devices []resourceapi.Device) string {
				for _, d := range devices {
					tainted := slices.ContainsFunc(d.Taints, func(x resourceapi.DeviceTaint) bool {
						return x.Key == dra.TaintUnhealthy && x.Effect == resourceapi.DeviceTaintEffectNoSchedule
					})
					if tainted != (d.Name == "gpu-2") {
						return fmt.Sprintf("%s: taints %v", d.Name, d.Taints)
					}
				}
				return ""
			})
		})
	}
}
