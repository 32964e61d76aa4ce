package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/nodeagent/cdi"
	"github.com/tessera-gpu/tessera/nodeagent/deviceplugin"
	"github.com/tessera-gpu/tessera/test/e2e"
)

// prepared is a claim a node agent prepared: on which GPUs, and the share's MiB (0: the
// whole GPU), as its answer and its CDI spec say.
type prepared struct {
	node     string
	claim    string
	uuids    []string
	shareMiB int64
}

// kubelet plays the kubelets' part for claims: it asks a pod's node agent to prepare the
// pod's claims once the pod is bound, and to unprepare them once it ended, retrying
// what fails, as the kubelet does. What the agents prepared is their ledger.
type kubelet struct {
	c    *e2e.Cluster
	mu   sync.Mutex
	conn map[string]drapb.DRAPluginClient
	done map[types.UID]prepared
}

func newKubelet(c *e2e.Cluster) *kubelet {
	return &kubelet{c: c, conn: map[string]drapb.DRAPluginClient{}, done: map[types.UID]prepared{}}
}

// ledger is what the node agents prepared and did not unprepare.
func (k *kubelet) ledger() []prepared {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]prepared, 0, len(k.done))
	for _, p := range k.done {
		out = append(out, p)
	}
	return out
}

// run syncs every second until ctx ends.
func (k *kubelet) run(ctx context.Context) {
	for ctx.Err() == nil {
		k.sync(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (k *kubelet) sync(ctx context.Context) {
	var pods corev1.PodList
	if err := k.c.Client.List(ctx, &pods, client.MatchingLabels{LabelWorkload: "true"}); err != nil {
		return
	}
	active := map[types.UID]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || finished(p) || p.DeletionTimestamp != nil {
			continue
		}
		for _, st := range p.Status.ResourceClaimStatuses {
			if st.ResourceClaimName == nil {
				continue
			}
			var c resourcev1.ResourceClaim
			if err := k.c.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: *st.ResourceClaimName}, &c); err != nil || c.Status.Allocation == nil {
				continue
			}
			active[c.UID] = true
			k.mu.Lock()
			_, ok := k.done[c.UID]
			k.mu.Unlock()
			if !ok {
				_ = k.prepare(ctx, p.Spec.NodeName, &c)
			}
		}
	}
	for uid, p := range k.snapshot() {
		if !active[uid] {
			k.unprepare(ctx, uid, p)
		}
	}
}

func (k *kubelet) snapshot() map[types.UID]prepared {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[types.UID]prepared, len(k.done))
	for uid, p := range k.done {
		out[uid] = p
	}
	return out
}

// prepare asks node's agent to prepare claim c and records what it answered.
func (k *kubelet) prepare(ctx context.Context, node string, c *resourcev1.ResourceClaim) error {
	dra, err := k.client(ctx, node)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := dra.NodePrepareResources(rctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}}})
	if err != nil {
		k.forget(node)
		return err
	}
	r := resp.Claims[string(c.UID)]
	if r == nil || r.Error != "" {
		return fmt.Errorf("prepare %s/%s: %v", c.Namespace, c.Name, r)
	}
	p := prepared{node: node, claim: c.Namespace + "/" + c.Name}
	for _, d := range r.Devices {
		for _, id := range d.CdiDeviceIds {
			if uuid, ok := strings.CutPrefix(id, "nvidia.com/gpu="); ok {
				p.uuids = append(p.uuids, uuid)
			}
		}
	}
	if spec, err := (cdi.Writer{Dir: k.c.NodeDirs(node).CDI}).Read(string(c.UID)); err == nil {
		for _, d := range spec.Devices {
			for _, env := range d.ContainerEdits.Env {
				if v, ok := strings.CutPrefix(env, deviceplugin.EnvMPSMemoryLimit+"="); ok {
					// <UUID>=<MiB>M
					if i := strings.LastIndex(v, "="); i >= 0 {
						p.shareMiB, _ = strconv.ParseInt(strings.TrimSuffix(v[i+1:], "M"), 10, 64)
					}
				}
			}
		}
	}
	k.mu.Lock()
	k.done[c.UID] = p
	k.mu.Unlock()
	return nil
}

// unprepare asks the claim's agent to unprepare it; a node that is gone has nothing to
// unprepare.
func (k *kubelet) unprepare(ctx context.Context, uid types.UID, p prepared) {
	gone := false
	if err := k.c.Client.Get(ctx, client.ObjectKey{Name: p.node}, &corev1.Node{}); client.IgnoreNotFound(err) == nil && err != nil {
		gone = true
	}
	if !gone {
		dra, err := k.client(ctx, p.node)
		if err != nil {
			return
		}
		ns, name, _ := strings.Cut(p.claim, "/")
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := dra.NodeUnprepareResources(rctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: ns, Name: name, Uid: string(uid)}}})
		if err != nil {
			k.forget(p.node)
			return
		}
		if r := resp.Claims[string(uid)]; r == nil || r.Error != "" {
			return
		}
	}
	k.mu.Lock()
	delete(k.done, uid)
	k.mu.Unlock()
}

// client connects to node's DRA plugin as the kubelet's plugin watcher does: through the
// registration socket, which names the plugin's endpoint.
func (k *kubelet) client(ctx context.Context, node string) (drapb.DRAPluginClient, error) {
	k.mu.Lock()
	c, ok := k.conn[node]
	k.mu.Unlock()
	if ok {
		return c, nil
	}
	socket := filepath.Join(k.c.NodeDirs(node).Registry, tesserav1.DRADriver+"-reg.sock")
	if _, err := os.Stat(socket); err != nil {
		return nil, err
	}
	reg, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer reg.Close()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := registerapi.NewRegistrationClient(reg).GetInfo(rctx, &registerapi.InfoRequest{})
	if err != nil {
		return nil, err
	}
	if _, err := registerapi.NewRegistrationClient(reg).NotifyRegistrationStatus(rctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient("unix://"+info.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	c = drapb.NewDRAPluginClient(conn)
	k.mu.Lock()
	k.conn[node] = c
	k.mu.Unlock()
	return c, nil
}

// forget drops node's connection after an error (its agent restarted).
func (k *kubelet) forget(node string) {
	k.mu.Lock()
	delete(k.conn, node)
	k.mu.Unlock()
}
