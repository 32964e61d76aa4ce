package deviceplugin

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	pb "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Device list strategies: how Allocate tells the container runtime which GPUs a
// container gets (the names of the NVIDIA device plugin's --device-list-strategy).
const (
	// StrategyCDICRI names the GPUs' CDI devices in the Allocate response; the kubelet
	// passes them to the runtime in the CRI request (containerd 1.7+, CRI-O 1.23+ with
	// CDI enabled).
	StrategyCDICRI = "cdi-cri"
	// StrategyCDIAnnotations names them in cdi.k8s.io/ container annotations, for
	// runtimes that read CDI requests from annotations (the NVIDIA container runtime in
	// cdi mode, older containerd).
	StrategyCDIAnnotations = "cdi-annotations"
	// StrategyVolumeMounts mounts /dev/null at /var/run/nvidia-container-devices/<UUID>
	// for every GPU: the NVIDIA container toolkit's
	// accept-nvidia-visible-devices-as-volume-mounts mode. A pod cannot add such a mount
	// without a host path.
	StrategyVolumeMounts = "volume-mounts"
	// StrategyEnvvar sets NVIDIA_VISIBLE_DEVICES to the GPUs' UUIDs. The pod's own
	// environment is applied after the plugin's, so a pod can widen it: use it only where
	// the runtime gets its devices some other way as well.
	StrategyEnvvar = "envvar"
)

// Strategies lists every device list strategy, the default first.
var Strategies = []string{StrategyCDICRI, StrategyCDIAnnotations, StrategyVolumeMounts, StrategyEnvvar}

// DefaultCDIKind is the CDI vendor/class of the GPUs in the NVIDIA container toolkit's
// generated CDI spec (`nvidia-ctk cdi generate`, the GPU Operator): its devices are
// named nvidia.com/gpu=<UUID>.
const DefaultCDIKind = "nvidia.com/gpu"

// Paths of the volume-mounts strategy (the NVIDIA container toolkit's convention).
const (
	VolumeMountsRoot     = "/var/run/nvidia-container-devices"
	volumeMountsHostPath = "/dev/null"
	// VoidDevices is NVIDIA_VISIBLE_DEVICES for a container whose GPUs come as devices:
	// an image's own NVIDIA_VISIBLE_DEVICES=all does not reach the NVIDIA runtime hook.
	VoidDevices = "void"
)

// cdiAnnotationPrefix is the prefix of CDI device requests in container annotations.
const cdiAnnotationPrefix = "cdi.k8s.io/"

// ParseStrategies reads a comma-separated list of device list strategies.
func ParseStrategies(s string) ([]string, error) {
	var out []string
	for _, x := range strings.Split(s, ",") {
		x = strings.TrimSpace(x)
		if x == "" {
			continue
		}
		if !slices.Contains(Strategies, x) {
			return nil, fmt.Errorf("unknown device list strategy %q (one or more of %s)", x, strings.Join(Strategies, ", "))
		}
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no device list strategy given (one or more of %s)", strings.Join(Strategies, ", "))
	}
	return out, nil
}

// EnvOnly reports whether strategies hand GPUs out through the environment alone, which
// a pod can override.
func EnvOnly(strategies []string) bool {
	return len(strategies) > 0 && !slices.ContainsFunc(strategies, func(s string) bool { return s != StrategyEnvvar })
}

// MPSControl is the node's MPS control daemon, which enforces memory slices: the
// containers that share a GPU reach it through its pipe directory, and it holds their
// GPU-memory limit where a container cannot change it (its
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT may only lower it).
type MPSControl interface {
	// PipeDir is the daemon's CUDA_MPS_PIPE_DIRECTORY on the host.
	PipeDir() string
	// Running returns an error when no control daemon answers.
	Running(ctx context.Context) error
	// SetPinnedMemLimit sets the device pinned memory limit of the MPS clients of GPU
	// uuid to mib MiB.
	SetPinnedMemLimit(ctx context.Context, uuid string, mib int64) error
}

// grant is what one container is handed.
type grant struct {
	uuids []string
	// limitMiB is the GPU memory the container may use: a whole GPU's, or a slice's
	// limit (its request unless the pod sets tesserav1.AnnotationGPUMemoryLimit).
	limitMiB int64
	slice    bool // a memory slice of uuids[0]
	id       string
}

// response builds the container's Allocate response for the plugin's strategies.
func (p *Plugin) response(g grant) *pb.ContainerAllocateResponse {
	r := &pb.ContainerAllocateResponse{Envs: map[string]string{
		EnvMemoryLimitMiB: strconv.FormatInt(g.limitMiB, 10),
	}}
	var cdi []string
	for _, uuid := range g.uuids {
		cdi = append(cdi, p.opts.CDIKind+"="+uuid)
	}
	for _, s := range p.opts.Strategies {
		switch s {
		case StrategyCDICRI:
			for _, name := range cdi {
				r.CdiDevices = append(r.CdiDevices, &pb.CDIDevice{Name: name})
			}
		case StrategyCDIAnnotations:
			r.Annotations = map[string]string{cdiAnnotationPrefix + "tessera-gpu_" + g.id: strings.Join(cdi, ",")}
		case StrategyVolumeMounts:
			for _, uuid := range g.uuids {
				r.Mounts = append(r.Mounts, &pb.Mount{HostPath: volumeMountsHostPath, ContainerPath: filepath.Join(VolumeMountsRoot, uuid), ReadOnly: true})
			}
		}
	}
	switch {
	case slices.Contains(p.opts.Strategies, StrategyEnvvar):
		r.Envs[EnvVisibleDevices] = strings.Join(g.uuids, ",")
	case slices.Contains(p.opts.Strategies, StrategyVolumeMounts):
		r.Envs[EnvVisibleDevices] = VolumeMountsRoot
	default:
		r.Envs[EnvVisibleDevices] = VoidDevices
	}
	if p.opts.MPS != nil && g.slice {
		// The container's CUDA reaches the MPS control daemon through its pipe directory
		// and so runs as its client; it sees its one GPU as device 0; the daemon holds
		// the limit the container cannot raise.
		dir := p.opts.MPS.PipeDir()
		r.Mounts = append(r.Mounts, &pb.Mount{HostPath: dir, ContainerPath: dir})
		r.Envs[EnvMPSPipeDir] = dir
		r.Envs[EnvMPSMemoryLimit] = fmt.Sprintf("0=%dM", g.limitMiB)
	}
	return r
}
