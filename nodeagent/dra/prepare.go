package dra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	specs "tags.cncf.io/container-device-interface/specs-go"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/nodeagent/cdi"
	"github.com/tessera-gpu/tessera/nodeagent/deviceplugin"
	"github.com/tessera-gpu/tessera/nodeagent/gpu"
	"github.com/tessera-gpu/tessera/nodeagent/mps"
)

// EnvMPSPipeDirectory is where CUDA looks for the MPS control daemon.
const EnvMPSPipeDirectory = "CUDA_MPS_PIPE_DIRECTORY"

// Fixes of a GPU not set up for memory shares.
const (
	fixComputeMode = "set the GPU's compute mode with `nvidia-smi -i %s -c EXCLUSIVE_PROCESS` and start the MPS control daemon " +
		"(`nvidia-cuda-mps-control -d` with CUDA_MPS_PIPE_DIRECTORY=%s), or enable the NVIDIA GPU Operator's MPS sharing"
	fixDaemon = "start the MPS control daemon (`nvidia-cuda-mps-control -d` with CUDA_MPS_PIPE_DIRECTORY=%s), " +
		"or enable the NVIDIA GPU Operator's MPS sharing"
)

// prepare writes the claim's CDI spec and returns its devices: for every result of this
// driver, the GPU's toolkit CDI device and the claim's own.
func (d *Driver) prepare(ctx context.Context, c *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	if c.Status.Allocation == nil {
		return nil, errors.New("the claim is not allocated")
	}
	d.mu.Lock()
	gpus, known, refusal := d.gpus, d.known, d.refusal
	d.mu.Unlock()
	if refusal != "" {
		return nil, fmt.Errorf("node %s hands out no GPU: %s", d.opts.NodeName, refusal)
	}
	if !known {
		return nil, fmt.Errorf("the GPUs of node %s are not discovered yet (NVML); the kubelet retries", d.opts.NodeName)
	}
	var devices []kubeletplugin.Device
	var edits []specs.Device
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != DriverName {
			continue
		}
		if r.Pool != d.opts.NodeName {
			return nil, fmt.Errorf("request %s: device %s is in pool %q, not in this node's pool %q: the allocation names another node",
				r.Request, r.Device, r.Pool, d.opts.NodeName)
		}
		g, ok := gpus[r.Device]
		if !ok {
			return nil, fmt.Errorf("request %s: device %s is not a GPU of node %s (it has %s)", r.Request, r.Device, d.opts.NodeName, deviceNames(gpus))
		}
		limit, err := shareLimitMiB(c.Status.Allocation.Devices.Config, r.Request)
		if err != nil {
			return nil, fmt.Errorf("request %s: %w", r.Request, err)
		}
		edit, err := d.containerEdits(ctx, g, r, limit)
		if err != nil {
			return nil, fmt.Errorf("request %s: %w", r.Request, err)
		}
		name := claimDeviceName(c, r)
		edits = append(edits, specs.Device{Name: name, ContainerEdits: edit})
		devices = append(devices, kubeletplugin.Device{
			Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device, ShareID: r.ShareID,
			CDIDeviceIDs: []string{d.opts.GPUCDIKind + "=" + g.UUID, cdi.QualifiedName(name)},
		})
	}
	if len(edits) == 0 {
		return nil, nil
	}
	if err := d.cdi.Write(string(c.UID), edits); err != nil {
		return nil, err
	}
	return devices, nil
}

// claimDeviceName is the claim's CDI device for result r: the claim UID, the request
// (a subrequest's slash made a dot) and the device, unique on the node, never reused.
func claimDeviceName(c *resourceapi.ResourceClaim, r resourceapi.DeviceRequestAllocationResult) string {
	return string(c.UID) + "-" + strings.ReplaceAll(r.Request, "/", ".") + "-" + r.Device
}

// share returns the GPU memory, in MiB, that result r gives its containers and whether
// that is a memory share: less than the whole GPU, or any allocation of a GPU published
// for sharing.
func (d *Driver) share(g GPU, r resourceapi.DeviceRequestAllocationResult) (mib int64, share bool) {
	q, consumed := r.ConsumedCapacity[CapacityMemory]
	switch {
	case consumed && q.Value() < g.MemoryMiB<<20:
		return q.Value() >> 20, true
	case consumed && (r.ShareID != nil || d.policy.sharing(g)):
		return q.Value() >> 20, true
	case r.ShareID != nil || d.policy.sharing(g):
		return g.MemoryMiB, true
	}
	return g.MemoryMiB, false
}

// shareLimitMiB is the GPU-memory limit the claim's opaque configuration
// (tesserav1.GPUShareConfig of this driver) sets for request, or 0 when none does. A
// configuration for named requests applies to them and their subrequests; the last one
// that applies wins (the claim's own come after its class's).
func shareLimitMiB(configs []resourceapi.DeviceAllocationConfiguration, request string) (int64, error) {
	parent, _, _ := strings.Cut(request, "/")
	var limit int64
	for i, c := range configs {
		if c.Opaque == nil || c.Opaque.Driver != DriverName ||
			len(c.Requests) > 0 && !slices.Contains(c.Requests, request) && !slices.Contains(c.Requests, parent) {
			continue
		}
		field := fmt.Sprintf("status.allocation.devices.config[%d].opaque.parameters (from the %s)", i, strings.ToLower(string(c.Source)))
		cfg, err := tesserav1.ParseGPUShareConfig(c.Opaque.Parameters.Raw, field)
		if err != nil {
			return 0, err
		}
		if cfg.MemoryLimit == "" {
			continue
		}
		if limit, err = tesserav1.ParseGPUMemoryMiB(field+".memoryLimit", cfg.MemoryLimit); err != nil {
			return 0, err
		}
	}
	return limit, nil
}

// containerEdits is what the claim device adds to a container for GPU g: its memory
// limit and, for a share, the MPS limit, pipe directory and mount. A share's limit is
// limitMiB when set (the claim's GPUShareConfig), else the share itself. A share on a
// GPU not set up for MPS is refused, as is a limit below the share or above the GPU.
func (d *Driver) containerEdits(ctx context.Context, g GPU, r resourceapi.DeviceRequestAllocationResult, limitMiB int64) (specs.ContainerEdits, error) {
	mib, share := d.share(g, r)
	if share && limitMiB > 0 {
		switch {
		case limitMiB < mib:
			return specs.ContainerEdits{}, fmt.Errorf("the claim's %s memoryLimit of %d MiB is below its share of %d MiB: a limit is at least the share (remove it for limit = share)",
				tesserav1.GPUShareConfigKind, limitMiB, mib)
		case limitMiB > g.MemoryMiB:
			return specs.ContainerEdits{}, fmt.Errorf("the claim's %s memoryLimit of %d MiB is larger than GPU %s (%d MiB): lower it to at most the GPU's memory",
				tesserav1.GPUShareConfigKind, limitMiB, g.UUID, g.MemoryMiB)
		}
		mib = limitMiB
	}
	edits := specs.ContainerEdits{Env: []string{deviceplugin.EnvMemoryLimitMiB + "=" + strconv.FormatInt(mib, 10)}}
	if !share {
		return edits, nil
	}
	if err := d.checkShare(ctx, g, mib); err != nil {
		return edits, err
	}
	pipe := d.opts.MPS.PipeDir()
	edits.Env = append(edits.Env,
		fmt.Sprintf("%s=%s=%dM", deviceplugin.EnvMPSMemoryLimit, g.UUID, mib),
		EnvMPSPipeDirectory+"="+pipe)
	edits.Mounts = []*specs.Mount{{HostPath: pipe, ContainerPath: pipe, Options: []string{"rw", "nosuid", "nodev", "bind"}}}
	return edits, nil
}

// checkShare refuses a share of mib MiB on g unless MPS enforces it: the agent runs
// with MPS, the GPU is in EXCLUSIVE_PROCESS compute mode and the MPS control daemon
// answers on its pipe directory.
func (d *Driver) checkShare(ctx context.Context, g GPU, mib int64) error {
	what := fmt.Sprintf("GPU %s (%s, index %d)", DeviceName(g.Index), g.UUID, g.Index)
	if d.opts.MPS == nil {
		return fmt.Errorf("%s: a %d MiB memory share needs MPS, and the node agent runs without --mps; %s, then run the agent with --mps",
			what, mib, fmt.Sprintf(fixComputeMode, g.UUID, mps.DefaultPipeDirectory))
	}
	pipe := d.opts.MPS.PipeDir()
	fix := fmt.Sprintf(fixComputeMode, g.UUID, pipe)
	if g.ComputeMode != gpu.ComputeModeExclusiveProcess {
		mode := g.ComputeMode
		if mode == "" {
			mode = "unknown"
		}
		return fmt.Errorf("%s is in compute mode %s: a %d MiB memory share is enforced only by MPS on a GPU in EXCLUSIVE_PROCESS mode; %s", what, mode, mib, fix)
	}
	if err := d.opts.MPS.Running(ctx); err != nil {
		return fmt.Errorf("%s: the MPS control daemon is not running on pipe directory %s (%v), so nothing holds a container to its %d MiB share; %s",
			what, pipe, err, mib, fmt.Sprintf(fixDaemon, pipe))
	}
	return nil
}

// deviceNames lists the devices of gpus, in index order.
func deviceNames(gpus map[string]GPU) string {
	if len(gpus) == 0 {
		return "none"
	}
	list := make([]GPU, 0, len(gpus))
	for _, g := range gpus {
		list = append(list, g)
	}
	sortByIndex(list)
	names := make([]string, len(list))
	for i, g := range list {
		names[i] = DeviceName(g.Index)
	}
	return strings.Join(names, ", ")
}

// sortByIndex orders gpus by NVML index.
func sortByIndex(gpus []GPU) {
	slices.SortFunc(gpus, func(a, b GPU) int { return a.Index - b.Index })
}
