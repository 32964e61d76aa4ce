package nvidiatest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/tessera-gpu/tessera/nodeagent/nvidia"
)

// Node is a simulated GPU node.
type Node struct {
	Server  *server.Server
	Devices []*server.Device

	mu        sync.Mutex
	usage     []Usage
	lost      []bool
	modes     []nvml.ComputeMode
	initFails int
	initRet   nvml.Return
	events    chan nvml.EventData
}

// Usage is what a GPU reports when sampled.
type Usage struct {
	UtilizationPercent uint32
	MemoryUsedMiB      uint64
	TemperatureC       uint32
	// Processes maps PIDs to the GPU memory they hold, in MiB.
	Processes map[uint32]uint64
}

// Topology describes how the GPUs are wired.
type Topology struct {
	// NVLinks are direct GPU-to-GPU NVLink bridges: pair -> number of links.
	NVLinks map[[2]int]int
	// NVSwitchLinks is the number of links from every GPU to the NVSwitch fabric.
	NVSwitchLinks int
	// GPUsPerNUMA puts GPUs 0..k-1 on NUMA node 0, k..2k-1 on node 1 ...
	GPUsPerNUMA int
}

// DGXA100 is 8 x A100-SXM4-40GB on NVSwitch (12 NVLinks each), 4 GPUs per NUMA node.
func DGXA100() *Node { return build(dgxa100.New(), Topology{NVSwitchLinks: 12, GPUsPerNUMA: 4}) }

// DGXA100x80GB is 8 x A100-SXM4-80GB on NVSwitch, wired as DGXA100.
func DGXA100x80GB() *Node {
	return build(dgxa100.NewWithGPUs(gpus.Multiple(8, gpus.A100_SXM4_80GB)...), Topology{NVSwitchLinks: 12, GPUsPerNUMA: 4})
}

// DGXH100 is 8 x H100-SXM5-80GB on NVSwitch (18 NVLinks each), 4 GPUs per NUMA node.
func DGXH100() *Node { return build(dgxh100.New(), Topology{NVSwitchLinks: 18, GPUsPerNUMA: 4}) }

// PCIeA100 is 4 x A100-PCIE-80GB with NVLink bridges between GPUs 0-1 and 2-3 and no
// NVSwitch: two NVLink islands. All four GPUs hang off one CPU.
func PCIeA100() *Node {
	return build(dgxa100.NewWithGPUs(gpus.Multiple(4, gpus.A100_PCIE_80GB)...),
		Topology{NVLinks: map[[2]int]int{{0, 1}: 12, {2, 3}: 12}, GPUsPerNUMA: 4})
}

// Models names the simulated nodes ByName builds.
var Models = map[string]func() *Node{
	"dgxa100":      DGXA100,
	"dgxa100-80gb": DGXA100x80GB,
	"dgxh100":      DGXH100,
	"pcie-a100":    PCIeA100,
}

// ByName builds the simulated node Models names, or says which names exist.
func ByName(name string) (*Node, error) {
	if build, ok := Models[name]; ok {
		return build(), nil
	}
	names := slices.Sorted(maps.Keys(Models))
	return nil, fmt.Errorf("unknown simulated node %q: use one of %s", name, strings.Join(names, ", "))
}

// switchBusID is the PCI bus id the NVSwitch links report.
const switchBusID = "00000000:c1:00.0"

func build(s *server.Server, topo Topology) *Node {
	n := &Node{Server: s, initRet: nvml.SUCCESS, events: make(chan nvml.EventData, 16)}
	for _, d := range s.Devices {
		n.Devices = append(n.Devices, d.(*server.Device))
	}
	n.usage = make([]Usage, len(n.Devices))
	n.lost = make([]bool, len(n.Devices))
	n.modes = make([]nvml.ComputeMode, len(n.Devices))
	for i, d := range n.Devices {
		n.fill(i, d, topo)
	}
	initOK := s.InitFunc
	s.InitFunc = func() nvml.Return {
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.initFails > 0 {
			n.initFails--
			return n.initRet
		}
		return initOK()
	}
	s.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
			WaitFunc: func(ms uint32) (nvml.EventData, nvml.Return) {
				select {
				case e := <-n.events:
					return e, nvml.SUCCESS
				case <-time.After(time.Duration(ms) * time.Millisecond):
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				}
			},
		}, nvml.SUCCESS
	}
	return n
}

// Source returns the NVML adapter over this node.
func (n *Node) Source() *nvidia.Source { return nvidia.New(n.Server) }

func (n *Node) isLost(i int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lost[i]
}

func nvmlBusID(i int) string { return fmt.Sprintf("00000000:%02x:00.0", i) }

func pciInfo(busID string, devID uint32) nvml.PciInfo {
	p := nvml.PciInfo{PciDeviceId: devID}
	for k := 0; k < len(busID) && k < len(p.BusId)-1; k++ {
		p.BusId[k] = int8(busID[k])
	}
	return p
}

// fill installs the mock functions that go-nvml's servers leave unset.
func (n *Node) fill(i int, d *server.Device, topo Topology) {
	uuid, name, mem := d.GetUUIDFunc, d.GetNameFunc, d.GetMemoryInfoFunc
	d.GetUUIDFunc = func() (string, nvml.Return) {
		if n.isLost(i) {
			return "", nvml.ERROR_GPU_IS_LOST
		}
		return uuid()
	}
	d.GetNameFunc = func() (string, nvml.Return) {
		if n.isLost(i) {
			return "", nvml.ERROR_GPU_IS_LOST
		}
		return name()
	}
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		if n.isLost(i) {
			return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST
		}
		m, ret := mem()
		n.mu.Lock()
		m.Used = n.usage[i].MemoryUsedMiB << 20
		n.mu.Unlock()
		m.Free = m.Total - m.Used
		return m, ret
	}
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		return pciInfo(nvmlBusID(i), d.Config.PciDeviceId), nvml.SUCCESS
	}
	d.GetComputeModeFunc = func() (nvml.ComputeMode, nvml.Return) {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.modes[i], nvml.SUCCESS
	}
	d.GetNumaNodeIdFunc = func() (int, nvml.Return) {
		if topo.GPUsPerNUMA == 0 {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		return i / topo.GPUsPerNUMA, nvml.SUCCESS
	}
	// Links 0..k-1 are direct bridges in pair order, then the NVSwitch links.
	type link struct {
		peer   int // -1: NVSwitch
		remote string
	}
	var links []link
	for p, c := range topo.NVLinks {
		peer := -1
		switch i {
		case p[0]:
			peer = p[1]
		case p[1]:
			peer = p[0]
		}
		for range c {
			if peer >= 0 {
				links = append(links, link{peer, nvmlBusID(peer)})
			}
		}
	}
	for range topo.NVSwitchLinks {
		links = append(links, link{-1, switchBusID})
	}
	d.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
		if l >= len(links) {
			return nvml.FEATURE_DISABLED, nvml.ERROR_INVALID_ARGUMENT
		}
		return nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetNvLinkRemotePciInfoFunc = func(l int) (nvml.PciInfo, nvml.Return) {
		if l >= len(links) {
			return nvml.PciInfo{}, nvml.ERROR_INVALID_ARGUMENT
		}
		return pciInfo(links[l].remote, 0), nvml.SUCCESS
	}
	d.GetNvLinkRemoteDeviceTypeFunc = func(l int) (nvml.IntNvLinkDeviceType, nvml.Return) {
		if l >= len(links) {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		if links[l].peer < 0 {
			return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
		}
		return nvml.NVLINK_DEVICE_TYPE_GPU, nvml.SUCCESS
	}
	d.GetTopologyCommonAncestorFunc = func(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
		j := other.(*server.Device).Index
		switch {
		case i/2 == j/2:
			return nvml.TOPOLOGY_SINGLE, nvml.SUCCESS
		case topo.GPUsPerNUMA > 0 && i/topo.GPUsPerNUMA == j/topo.GPUsPerNUMA:
			return nvml.TOPOLOGY_NODE, nvml.SUCCESS
		}
		return nvml.TOPOLOGY_SYSTEM, nvml.SUCCESS
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		if n.isLost(i) {
			return nvml.Utilization{}, nvml.ERROR_GPU_IS_LOST
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		return nvml.Utilization{Gpu: n.usage[i].UtilizationPercent}, nvml.SUCCESS
	}
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
		if n.isLost(i) {
			return 0, nvml.ERROR_GPU_IS_LOST
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.usage[i].TemperatureC, nvml.SUCCESS
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		if n.isLost(i) {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		var out []nvml.ProcessInfo
		for pid, mib := range n.usage[i].Processes {
			out = append(out, nvml.ProcessInfo{Pid: pid, UsedGpuMemory: mib << 20})
		}
		return out, nvml.SUCCESS
	}
	d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) {
		return nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError | nvml.EventTypeSingleBitEccError, nvml.SUCCESS
	}
	d.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
}

// SetUsage sets what GPU i reports from now on.
func (n *Node) SetUsage(i int, u Usage) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.usage[i] = u
}

// ComputeModes are the compute modes a simulated GPU can be in, by the names
// nvidia-smi -c takes.
var ComputeModes = map[string]nvml.ComputeMode{
	"default":           nvml.COMPUTEMODE_DEFAULT,
	"exclusive-process": nvml.COMPUTEMODE_EXCLUSIVE_PROCESS,
	"prohibited":        nvml.COMPUTEMODE_PROHIBITED,
}

// SetComputeMode sets GPU i's compute mode (every GPU starts in DEFAULT).
func (n *Node) SetComputeMode(i int, m nvml.ComputeMode) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.modes[i] = m
}

// Lose makes GPU i fall off the bus: every read of it returns ERROR_GPU_IS_LOST.
func (n *Node) Lose(i int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lost[i] = true
}

// FailInit makes the next times calls of Init return ret (ERROR_LIBRARY_NOT_FOUND for
// a node without the driver).
func (n *Node) FailInit(ret nvml.Return, times int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.initRet, n.initFails = ret, times
}

// Xid delivers an Xid critical-error event for GPU i.
func (n *Node) Xid(i int, xid uint64) {
	n.events <- nvml.EventData{Device: n.Devices[i], EventType: nvml.EventTypeXidCriticalError, EventData: xid}
}

// UUID returns GPU i's UUID.
func (n *Node) UUID(i int) string { return n.Devices[i].UUID }
