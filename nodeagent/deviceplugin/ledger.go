package deviceplugin

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	podresources "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DefaultPodResourcesSocket is the kubelet's pod resources API.
const DefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// PodName names a pod by namespace and name, as the kubelet's pod resources API does:
// it carries no UID.
type PodName struct {
	Namespace, Name string
}

// PodContainer names a container of a pod by the pod's namespace and name, as the
// kubelet's pod resources API does.
type PodContainer struct {
	Namespace, Pod, Container string
}

func (c PodContainer) pod() PodName { return PodName{c.Namespace, c.Pod} }

// KubeletPods is the kubelet's pod resources API for one resource.
type KubeletPods struct {
	// Pods are the pods the kubelet lists: those it admitted and has not finished, and
	// the one it is admitting, which it lists before its admission allocates devices.
	// A pod bound to the node that the kubelet has not received yet is not listed.
	Pods map[PodName]bool
	// Devices are the device IDs of the resource that each container holds.
	Devices map[PodContainer][]string
}

// Ledger is the kubelet's record of which pods it knows and which containers it has
// allocated devices of a resource to. It outlives the plugin: after a restart of the
// node agent, a pod that was allocated before it but has not started yet (pulling its
// image) is not taken for the pod the next Allocate is for.
type Ledger interface {
	Read(ctx context.Context, resource corev1.ResourceName) (KubeletPods, error)
}

// KubeletLedger reads the kubelet's own record of device allocations, its pod resources
// API (List), kept in the kubelet's checkpoint.
type KubeletLedger struct {
	// Socket is the pod resources socket (default DefaultPodResourcesSocket).
	Socket string
}

var _ Ledger = KubeletLedger{}

// Read lists the pods the kubelet knows and the devices of resource their containers
// hold.
func (l KubeletLedger) Read(ctx context.Context, resource corev1.ResourceName) (KubeletPods, error) {
	socket := l.Socket
	if socket == "" {
		socket = DefaultPodResourcesSocket
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return KubeletPods{}, fmt.Errorf("connect to the kubelet's pod resources API at %s: %w", socket, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := podresources.NewPodResourcesListerClient(conn).List(ctx, &podresources.ListPodResourcesRequest{})
	if err != nil {
		return KubeletPods{}, fmt.Errorf("list device allocations from the kubelet's pod resources API at %s (is it mounted from the host?): %w", socket, err)
	}
	out := KubeletPods{Pods: map[PodName]bool{}, Devices: map[PodContainer][]string{}}
	for _, p := range resp.PodResources {
		out.Pods[PodName{p.Namespace, p.Name}] = true
		for _, c := range p.Containers {
			for _, d := range c.Devices {
				if d.ResourceName == string(resource) && len(d.DeviceIds) > 0 {
					pc := PodContainer{p.Namespace, p.Name, c.Name}
					out.Devices[pc] = append(out.Devices[pc], d.DeviceIds...)
				}
			}
		}
	}
	return out, nil
}

// grantRecord is one container the plugin handed devices to.
type grantRecord struct {
	pod       PodName
	deviceIDs []string // the IDs the kubelet allocated to it
}

// grants is the plugin's own ledger of the containers it handed devices to, keyed by
// pod UID: a pod deleted and created again under the same name is another pod. It
// tells which pod the kubelet's record, which names pods by namespace and name only,
// is about.
type grants map[containerKey]grantRecord

// owner is the pod a container's devices in the kubelet's record belong to: the pod the
// plugin granted one of those devices to under that name, else the pod of that name
// now.
func (g grants) owner(pc PodContainer, ids []string, current map[PodName]types.UID) types.UID {
	for k, r := range g {
		if k.container == pc.Container && r.pod == pc.pod() && slices.ContainsFunc(ids, func(id string) bool { return slices.Contains(r.deviceIDs, id) }) {
			return k.pod
		}
	}
	return current[pc.pod()]
}

// heldBy reports whether the plugin granted any of ids to a container of pod.
func (g grants) heldBy(pod types.UID, ids []string) bool {
	for k, r := range g {
		if k.pod == pod && slices.ContainsFunc(ids, func(id string) bool { return slices.Contains(r.deviceIDs, id) }) {
			return true
		}
	}
	return false
}

// admitted reports whether the kubelet has admitted the pod: it writes container
// statuses only then, and it allocates the devices of all of a pod's containers when it
// admits it. The pod's status is the kubelet's to write, not the tenant's.
func admitted(pod *corev1.Pod) bool {
	return len(pod.Status.ContainerStatuses) > 0 || len(pod.Status.InitContainerStatuses) > 0
}
