package deviceplugin

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	podresources "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DefaultPodResourcesSocket is the kubelet's pod resources API.
const DefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// PodContainer names a container of a pod by the pod's namespace and name, as the
// kubelet's pod resources API does.
type PodContainer struct {
	Namespace, Pod, Container string
}

// Ledger tells which containers the kubelet has already allocated devices of a resource
// to. It outlives the plugin: after a restart of the node agent, a pod that was
// allocated before it but has not started yet (pulling its image) is not taken for the
// pod the next Allocate is for.
type Ledger interface {
	Allocated(ctx context.Context, resource corev1.ResourceName) (map[PodContainer]bool, error)
}

// KubeletLedger reads the kubelet's own record of device allocations, its pod resources
// API (List), kept in the kubelet's checkpoint.
type KubeletLedger struct {
	// Socket is the pod resources socket (default DefaultPodResourcesSocket).
	Socket string
}

var _ Ledger = KubeletLedger{}

// Allocated lists the containers that hold devices of resource.
func (l KubeletLedger) Allocated(ctx context.Context, resource corev1.ResourceName) (map[PodContainer]bool, error) {
	socket := l.Socket
	if socket == "" {
		socket = DefaultPodResourcesSocket
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connect to the kubelet's pod resources API at %s: %w", socket, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := podresources.NewPodResourcesListerClient(conn).List(ctx, &podresources.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("list device allocations from the kubelet's pod resources API at %s (is it mounted from the host?): %w", socket, err)
	}
	out := map[PodContainer]bool{}
	for _, p := range resp.PodResources {
		for _, c := range p.Containers {
			for _, d := range c.Devices {
				if d.ResourceName == string(resource) && len(d.DeviceIds) > 0 {
					out[PodContainer{p.Namespace, p.Name, c.Name}] = true
				}
			}
		}
	}
	return out, nil
}

// admitted reports whether the kubelet has admitted the pod: it writes container
// statuses only then, and it allocates the devices of all of a pod's containers when it
// admits it. The pod's status is the kubelet's to write, not the tenant's.
func admitted(pod *corev1.Pod) bool {
	return len(pod.Status.ContainerStatuses) > 0 || len(pod.Status.InitContainerStatuses) > 0
}
