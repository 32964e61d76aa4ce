package gpu

import (
	"context"
	"sort"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Device is one GPU as discovered.
type Device struct {
	Index      int
	UUID       string
	Model      string
	MemoryMiB  int64
	PCIBusID   string
	NUMANode   int // -1 when unknown
	MIGEnabled bool
	// MIGCapable says the GPU supports MIG at all (whether or not it is enabled).
	MIGCapable bool
	// ComputeCapability is the CUDA compute capability, "major.minor" ("" when unknown).
	ComputeCapability string
	// ComputeMode is NVML's compute mode: ComputeModeDefault, ComputeModeExclusiveProcess
	// or ComputeModeProhibited ("" when unknown). Memory shares enforced by MPS need
	// ComputeModeExclusiveProcess.
	ComputeMode     string
	Healthy         bool
	UnhealthyReason string
}

// Compute modes as ComputeMode reports them.
const (
	ComputeModeDefault          = "Default"
	ComputeModeExclusiveProcess = "ExclusiveProcess"
	ComputeModeProhibited       = "Prohibited"
)

// Link is the connection between GPUs A < B (device indexes).
type Link struct {
	A, B    int
	NVLinks int
	PCIe    tesserav1.PCIeRelation
}

// Inventory is what discovery found on the node.
type Inventory struct {
	DriverVersion string
	CUDAVersion   string
	Devices       []Device
	Links         []Link
}

// Process is one process holding memory on a GPU.
type Process struct {
	PID             uint32
	MemoryUsedBytes uint64
}

// Sample is one reading of one GPU. Err is set when the GPU could not be read; Lost
// additionally says NVML reported the GPU as fallen off the bus.
type Sample struct {
	Index              int
	UUID               string
	UtilizationPercent int
	MemoryUsedBytes    uint64
	MemoryTotalBytes   uint64
	TemperatureC       int
	Processes          []Process
	Err                error
	Lost               bool
}

// HealthEvent reports a GPU turning unhealthy (an Xid error, a double-bit ECC error,
// the GPU falling off the bus). UUID is empty when the event concerns every GPU.
type HealthEvent struct {
	UUID   string
	Reason string
}

// LostReason is the UnhealthyReason of a GPU that fell off the bus.
const LostReason = "GPU has fallen off the bus (NVML ERROR_GPU_IS_LOST); drain the node and reset or replace the GPU"

// Source reads GPUs. The NVML adapter implements it; every method but WatchHealth is
// called from one goroutine at a time.
type Source interface {
	// Init loads and initialises the vendor library; its error says what is missing.
	Init() error
	// Shutdown releases the library.
	Shutdown() error
	// Inventory discovers the devices, their links and the driver versions.
	Inventory() (Inventory, error)
	// Sample reads utilisation, memory, temperature and processes of every GPU; an
	// error means no GPU could be read at all.
	Sample() ([]Sample, error)
	// WatchHealth sends health events until ctx ends or the event source fails.
	WatchHealth(ctx context.Context, events chan<- HealthEvent) error
}

// Islands groups devices joined directly or indirectly by NVLink and returns each
// device's island number, indexed like devices. Islands are numbered 0, 1, ... in the
// order of their lowest device index; a device without NVLink is an island of its own.
func Islands(devices []Device, links []Link) map[int]int32 {
	parent := map[int]int{}
	var find func(int) int
	find = func(i int) int {
		p, ok := parent[i]
		if !ok || p == i {
			parent[i] = i
			return i
		}
		r := find(p)
		parent[i] = r
		return r
	}
	for _, d := range devices {
		find(d.Index)
	}
	for _, l := range links {
		if l.NVLinks <= 0 {
			continue
		}
		if _, ok := parent[l.A]; !ok {
			continue
		}
		if _, ok := parent[l.B]; !ok {
			continue
		}
		ra, rb := find(l.A), find(l.B)
		if ra == rb {
			continue
		}
		if rb < ra {
			ra, rb = rb, ra
		}
		parent[rb] = ra
	}
	idx := make([]int, 0, len(devices))
	for _, d := range devices {
		idx = append(idx, d.Index)
	}
	sort.Ints(idx)
	island := map[int]int32{}
	byRoot := map[int]int32{}
	for _, i := range idx {
		r := find(i)
		n, ok := byRoot[r]
		if !ok {
			n = int32(len(byRoot))
			byRoot[r] = n
		}
		island[i] = n
	}
	return island
}
