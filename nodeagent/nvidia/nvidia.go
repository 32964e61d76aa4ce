package nvidia

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/nodeagent/gpu"
)

// Source reads GPUs through NVML.
type Source struct {
	lib nvml.Interface

	mu sync.Mutex
	// uuids remembers each index's UUID, so a GPU that later falls off the bus can
	// still be reported by UUID.
	uuids map[int]string
}

var _ gpu.Source = (*Source)(nil)

// New returns a Source over lib (nvml.New() on a real node).
func New(lib nvml.Interface) *Source { return &Source{lib: lib, uuids: map[int]string{}} }

// NewSystem returns a Source over the node's libnvidia-ml.so.1.
func NewSystem() *Source { return New(nvml.New()) }

// Init initialises NVML.
func (s *Source) Init() error {
	if ret := s.lib.Init(); ret != nvml.SUCCESS {
		hint := ""
		switch ret {
		case nvml.ERROR_LIBRARY_NOT_FOUND:
			hint = ": libnvidia-ml.so.1 not found; install the NVIDIA driver on the node and mount it into the agent (the NVIDIA container toolkit does this)"
		case nvml.ERROR_DRIVER_NOT_LOADED:
			hint = ": the NVIDIA kernel driver is not loaded; check `nvidia-smi` on the node"
		case nvml.ERROR_NO_PERMISSION:
			hint = ": no permission to open /dev/nvidia*; run the agent privileged"
		}
		return fmt.Errorf("NVML init: %w%s", ret, hint)
	}
	return nil
}

// Shutdown shuts NVML down.
func (s *Source) Shutdown() error {
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML shutdown: %w", ret)
	}
	return nil
}

// retErr wraps a non-success NVML return with what was being read.
func retErr(what string, ret nvml.Return) error {
	if ret == nvml.SUCCESS {
		return nil
	}
	return fmt.Errorf("%s: %w", what, ret)
}

func isLost(err error) bool { return errors.Is(err, nvml.ERROR_GPU_IS_LOST) }

// LostReason is the UnhealthyReason of a GPU that fell off the bus.
const LostReason = gpu.LostReason

// Inventory discovers devices, links and driver versions.
func (s *Source) Inventory() (gpu.Inventory, error) {
	var inv gpu.Inventory
	drv, ret := s.lib.SystemGetDriverVersion()
	if err := retErr("read driver version", ret); err != nil {
		return inv, err
	}
	inv.DriverVersion = drv
	if v, ret := s.lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		inv.CUDAVersion = fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
	}
	n, ret := s.lib.DeviceGetCount()
	if err := retErr("count devices", ret); err != nil {
		return inv, err
	}
	handles := make([]nvml.Device, 0, n)
	for i := range n {
		d, h := s.device(i)
		if d.UUID == "" {
			// Neither now nor earlier could the GPU be identified: nothing to publish.
			continue
		}
		inv.Devices = append(inv.Devices, d)
		handles = append(handles, h)
	}
	inv.Links = s.links(inv.Devices, handles)
	return inv, nil
}

// device reads one device; the returned handle is nil when the GPU is unusable.
func (s *Source) device(i int) (gpu.Device, nvml.Device) {
	d := gpu.Device{Index: i, NUMANode: -1, Healthy: true}
	s.mu.Lock()
	d.UUID = s.uuids[i]
	s.mu.Unlock()
	fail := func(err error) (gpu.Device, nvml.Device) {
		d.Healthy = false
		d.UnhealthyReason = err.Error()
		if isLost(err) {
			d.UnhealthyReason = LostReason
		}
		return d, nil
	}
	h, ret := s.lib.DeviceGetHandleByIndex(i)
	if err := retErr(fmt.Sprintf("device %d: get handle", i), ret); err != nil {
		return fail(err)
	}
	uuid, ret := h.GetUUID()
	if err := retErr(fmt.Sprintf("device %d: read UUID", i), ret); err != nil {
		return fail(err)
	}
	d.UUID = uuid
	s.mu.Lock()
	s.uuids[i] = uuid
	s.mu.Unlock()
	name, ret := h.GetName()
	if err := retErr(fmt.Sprintf("device %d: read name", i), ret); err != nil {
		return fail(err)
	}
	d.Model = name
	mem, ret := h.GetMemoryInfo()
	if err := retErr(fmt.Sprintf("device %d: read memory", i), ret); err != nil {
		return fail(err)
	}
	d.MemoryMiB = int64(mem.Total >> 20)
	pci, ret := h.GetPciInfo()
	if err := retErr(fmt.Sprintf("device %d: read PCI info", i), ret); err != nil {
		return fail(err)
	}
	d.PCIBusID = busID(pci)
	if numa, ret := h.GetNumaNodeId(); ret == nvml.SUCCESS {
		d.NUMANode = numa
	} else if ret == nvml.ERROR_GPU_IS_LOST {
		return fail(retErr(fmt.Sprintf("device %d: read NUMA node", i), ret))
	}
	if cur, _, ret := h.GetMigMode(); ret == nvml.SUCCESS {
		d.MIGEnabled = cur == nvml.DEVICE_MIG_ENABLE
		d.MIGCapable = true
	} else if ret == nvml.ERROR_GPU_IS_LOST {
		return fail(retErr(fmt.Sprintf("device %d: read MIG mode", i), ret))
	}
	if major, minor, ret := h.GetCudaComputeCapability(); ret == nvml.SUCCESS {
		d.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	}
	if mode, ret := h.GetComputeMode(); ret == nvml.SUCCESS {
		d.ComputeMode = computeModes[mode]
	}
	return d, h
}

// computeModes names NVML's compute modes (EXCLUSIVE_THREAD is deprecated and unused).
var computeModes = map[nvml.ComputeMode]string{
	nvml.COMPUTEMODE_DEFAULT:           gpu.ComputeModeDefault,
	nvml.COMPUTEMODE_EXCLUSIVE_PROCESS: gpu.ComputeModeExclusiveProcess,
	nvml.COMPUTEMODE_PROHIBITED:        gpu.ComputeModeProhibited,
}

// busID returns the PCI bus id in NVML's canonical form, lower case.
func busID(p nvml.PciInfo) string {
	var b strings.Builder
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	id := strings.ToLower(b.String())
	if id == "" && (p.Domain != 0 || p.Bus != 0 || p.Device != 0) {
		id = fmt.Sprintf("%08x:%02x:%02x.0", p.Domain, p.Bus, p.Device)
	}
	return normalizeBusID(id)
}

// normalizeBusID drops the leading zeros of NVML's 8-digit domain so that
// "00000000:07:00.0" and "0000:07:00.0" compare equal.
func normalizeBusID(id string) string {
	dom, rest, ok := strings.Cut(id, ":")
	if !ok || len(dom) <= 4 {
		return id
	}
	return dom[len(dom)-4:] + ":" + rest
}

// links measures every pair of usable devices: NVLinks (direct, or through NVSwitch)
// and the PCIe common ancestor.
func (s *Source) links(devs []gpu.Device, handles []nvml.Device) []gpu.Link {
	byBus := map[string]int{}
	for k, d := range devs {
		if handles[k] != nil && d.PCIBusID != "" {
			byBus[d.PCIBusID] = d.Index
		}
	}
	direct := map[[2]int]int{}
	switchLinks := map[int]int{}
	for k, d := range devs {
		h := handles[k]
		if h == nil {
			continue
		}
		for l := range nvml.NVLINK_MAX_LINKS {
			state, ret := h.GetNvLinkState(l)
			if ret != nvml.SUCCESS {
				break // no such link, or NVLink not supported
			}
			if state != nvml.FEATURE_ENABLED {
				continue
			}
			remote, ret := h.GetNvLinkRemotePciInfo(l)
			if ret != nvml.SUCCESS {
				continue
			}
			if peer, ok := byBus[busID(remote)]; ok && peer != d.Index {
				direct[[2]int{d.Index, peer}]++
				continue
			}
			if t, ret := h.GetNvLinkRemoteDeviceType(l); ret == nvml.SUCCESS && t == nvml.NVLINK_DEVICE_TYPE_SWITCH {
				switchLinks[d.Index]++
			}
		}
	}
	var out []gpu.Link
	for a := range devs {
		for b := a + 1; b < len(devs); b++ {
			da, db := devs[a], devs[b]
			l := gpu.Link{A: da.Index, B: db.Index, PCIe: tesserav1.PCIeUnknown}
			// Both ends see a direct link; trust the end that sees more of them.
			l.NVLinks = max(direct[[2]int{da.Index, db.Index}], direct[[2]int{db.Index, da.Index}])
			l.NVLinks += min(switchLinks[da.Index], switchLinks[db.Index])
			l.NVLinks = min(l.NVLinks, 64)
			if handles[a] != nil && handles[b] != nil {
				if lvl, ret := handles[a].GetTopologyCommonAncestor(handles[b]); ret == nvml.SUCCESS {
					l.PCIe = relation(lvl)
				}
			}
			out = append(out, l)
		}
	}
	return out
}

// relations are the PCIe relations of NVML's topology levels.
var relations = map[nvml.GpuTopologyLevel]tesserav1.PCIeRelation{
	nvml.TOPOLOGY_INTERNAL:   tesserav1.PCIeSameBoard,
	nvml.TOPOLOGY_SINGLE:     tesserav1.PCIeSingleSwitch,
	nvml.TOPOLOGY_MULTIPLE:   tesserav1.PCIeMultiSwitch,
	nvml.TOPOLOGY_HOSTBRIDGE: tesserav1.PCIeHostBridge,
	nvml.TOPOLOGY_NODE:       tesserav1.PCIeSameCPU,
	nvml.TOPOLOGY_SYSTEM:     tesserav1.PCIeCrossCPU,
}

// relation is the PCIe relation of topology level l; PCIeUnknown for any other level.
func relation(l nvml.GpuTopologyLevel) tesserav1.PCIeRelation {
	if r, ok := relations[l]; ok {
		return r
	}
	return tesserav1.PCIeUnknown
}

// Sample reads every GPU.
func (s *Source) Sample() ([]gpu.Sample, error) {
	n, ret := s.lib.DeviceGetCount()
	if err := retErr("count devices", ret); err != nil {
		return nil, err
	}
	out := make([]gpu.Sample, 0, n)
	for i := range n {
		out = append(out, s.sample(i))
	}
	return out, nil
}

func (s *Source) sample(i int) gpu.Sample {
	smp := gpu.Sample{Index: i}
	s.mu.Lock()
	smp.UUID = s.uuids[i]
	s.mu.Unlock()
	fail := func(err error) gpu.Sample {
		smp.Err, smp.Lost = err, isLost(err)
		return smp
	}
	h, ret := s.lib.DeviceGetHandleByIndex(i)
	if err := retErr(fmt.Sprintf("device %d: get handle", i), ret); err != nil {
		return fail(err)
	}
	if smp.UUID == "" {
		uuid, ret := h.GetUUID()
		if err := retErr(fmt.Sprintf("device %d: read UUID", i), ret); err != nil {
			return fail(err)
		}
		smp.UUID = uuid
	}
	u, ret := h.GetUtilizationRates()
	if err := retErr(fmt.Sprintf("GPU %s: read utilization", smp.UUID), ret); err != nil {
		return fail(err)
	}
	smp.UtilizationPercent = int(u.Gpu)
	mem, ret := h.GetMemoryInfo()
	if err := retErr(fmt.Sprintf("GPU %s: read memory", smp.UUID), ret); err != nil {
		return fail(err)
	}
	smp.MemoryUsedBytes, smp.MemoryTotalBytes = mem.Used, mem.Total
	if t, ret := h.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
		smp.TemperatureC = int(t)
	} else if ret == nvml.ERROR_GPU_IS_LOST {
		return fail(retErr(fmt.Sprintf("GPU %s: read temperature", smp.UUID), ret))
	}
	procs, ret := h.GetComputeRunningProcesses()
	if err := retErr(fmt.Sprintf("GPU %s: list processes", smp.UUID), ret); err != nil && ret != nvml.ERROR_NOT_SUPPORTED {
		return fail(err)
	}
	for _, p := range procs {
		smp.Processes = append(smp.Processes, gpu.Process{PID: p.Pid, MemoryUsedBytes: p.UsedGpuMemory})
	}
	return smp
}

// Xids that an application causes (bad kernel, out of memory, killed context); they do
// not make a GPU unhealthy. The NVIDIA device plugin skips the same ones.
var applicationXids = map[uint64]bool{13: true, 31: true, 43: true, 45: true, 68: true, 109: true}

// healthEventMask are the NVML events that make a GPU unhealthy.
const healthEventMask = uint64(nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError)

// WatchHealth registers for Xid and double-bit ECC events on every GPU and reports
// critical ones until ctx ends.
func (s *Source) WatchHealth(ctx context.Context, events chan<- gpu.HealthEvent) error {
	set, ret := s.lib.EventSetCreate()
	if err := retErr("create NVML event set", ret); err != nil {
		return err
	}
	defer set.Free()
	n, ret := s.lib.DeviceGetCount()
	if err := retErr("count devices", ret); err != nil {
		return err
	}
	send := func(e gpu.HealthEvent) bool {
		select {
		case events <- e:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for i := range n {
		h, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue // reported unhealthy by Inventory and Sample
		}
		mask := healthEventMask
		if supported, ret := h.GetSupportedEventTypes(); ret == nvml.SUCCESS {
			mask &= supported
		}
		if mask == 0 {
			continue
		}
		if ret := h.RegisterEvents(mask, set); ret != nvml.SUCCESS && ret != nvml.ERROR_NOT_SUPPORTED {
			uuid, _ := h.GetUUID()
			if !send(gpu.HealthEvent{UUID: uuid, Reason: fmt.Sprintf("cannot watch health events: %v", ret)}) {
				return nil
			}
		}
	}
	for ctx.Err() == nil {
		e, ret := set.Wait(1000)
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_TIMEOUT:
			continue
		case nvml.ERROR_GPU_IS_LOST:
			if !send(gpu.HealthEvent{Reason: LostReason}) {
				return nil
			}
			continue
		default:
			return fmt.Errorf("wait for NVML events: %w", ret)
		}
		reason := ""
		switch {
		case e.EventType == nvml.EventTypeXidCriticalError && applicationXids[e.EventData]:
			continue
		case e.EventType == nvml.EventTypeXidCriticalError:
			reason = fmt.Sprintf("Xid %d critical error", e.EventData)
		case e.EventType == nvml.EventTypeDoubleBitEccError:
			reason = "double-bit ECC error"
		default:
			continue
		}
		uuid := ""
		if e.Device != nil {
			uuid, _ = e.Device.GetUUID()
		}
		if !send(gpu.HealthEvent{UUID: uuid, Reason: reason}) {
			return nil
		}
	}
	return nil
}
