// Package dratest drives the node agent's DRA driver from tests as the node would: a
// Kubelet that finds the driver through its registration socket and prepares and
// unprepares claims over the DRA socket, a stand-in for the MPS control program, and
// readers of the CDI specs the driver writes.
package dratest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	resourceapi "k8s.io/api/resource/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/nodeagent/cdi"
	"github.com/tessera-gpu/tessera/nodeagent/mps"
)

// RegistrationTimeout is how long Connect waits for the driver's registration socket.
const RegistrationTimeout = 20 * time.Second

// SocketDir is a new, short temporary directory, removed when the test ends: unix socket
// paths are limited to 108 bytes, which a directory named after a long test exceeds.
func SocketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// Kubelet plays the kubelet's part towards the driver over its real sockets.
type Kubelet struct {
	Client drapb.DRAPluginClient
}

// Connect waits for the driver's registration socket in registryDir, asks it what it is
// as the kubelet's plugin watcher does, confirms the registration and connects to the
// DRA socket it names. The connection closes when the test ends.
func Connect(t testing.TB, ctx context.Context, registryDir string) *Kubelet {
	t.Helper()
	socket := filepath.Join(registryDir, tesserav1.DRADriver+"-reg.sock")
	deadline := time.Now().Add(RegistrationTimeout)
	for {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no registration socket %s after %s: the driver did not start", socket, RegistrationTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	reg := dial(t, socket)
	info, err := registerapi.NewRegistrationClient(reg).GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != registerapi.DRAPlugin || info.Name != tesserav1.DRADriver || !slices.Contains(info.SupportedVersions, drapb.DRAPluginService) {
		t.Fatalf("registration info %+v: want a %s plugin named %s serving %s", info, registerapi.DRAPlugin, tesserav1.DRADriver, drapb.DRAPluginService)
	}
	if _, err := registerapi.NewRegistrationClient(reg).NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	return &Kubelet{Client: drapb.NewDRAPluginClient(dial(t, info.Endpoint))}
}

// dial connects to a unix socket until the test ends.
func dial(t testing.TB, socket string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func ref(c *resourceapi.ResourceClaim) *drapb.Claim {
	return &drapb.Claim{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}
}

// Prepare is NodePrepareResources for one claim: the driver's answer for it.
func (k *Kubelet) Prepare(t testing.TB, c *resourceapi.ResourceClaim) *drapb.NodePrepareResourceResponse {
	t.Helper()
	resp, err := k.Client.NodePrepareResources(t.Context(), &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{ref(c)}})
	if err != nil {
		t.Fatalf("prepare claim %s/%s: %v", c.Namespace, c.Name, err)
	}
	r, ok := resp.Claims[string(c.UID)]
	if !ok || len(resp.Claims) != 1 {
		t.Fatalf("response %v: want one answer, for claim %s", resp, c.UID)
	}
	return r
}

// Unprepare is NodeUnprepareResources for one claim; it fails the test unless the
// driver unprepared it.
func (k *Kubelet) Unprepare(t testing.TB, c *resourceapi.ResourceClaim) {
	t.Helper()
	resp, err := k.Client.NodeUnprepareResources(t.Context(), &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{ref(c)}})
	if err != nil {
		t.Fatalf("unprepare claim %s/%s: %v", c.Namespace, c.Name, err)
	}
	if r := resp.Claims[string(c.UID)]; r == nil || r.Error != "" {
		t.Fatalf("unprepare claim %s/%s: %v", c.Namespace, c.Name, resp)
	}
}

// MPSControl is a stand-in for nvidia-cuda-mps-control: it answers while its control
// daemon runs and fails, as the real program does, once the daemon stops.
type MPSControl struct {
	// Command is the program, named nvidia-cuda-mps-control; its directory can go first
	// on PATH.
	Command string
	// running exists while the daemon runs.
	running string
}

// StartMPSControl writes the program into dir, with its daemon running.
func StartMPSControl(t testing.TB, dir string) *MPSControl {
	t.Helper()
	m := &MPSControl{Command: filepath.Join(dir, mps.DefaultCommand), running: filepath.Join(dir, "mps-daemon-running")}
	script := "#!/bin/sh\ncat >/dev/null\nif [ -e " + m.running + " ]; then exit 0; fi\necho 'Cannot find MPS control daemon process'\nexit 1\n"
	if err := os.WriteFile(m.Command, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.running, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return m
}

// Stop stops the control daemon: the program fails from now on.
func (m *MPSControl) Stop(t testing.TB) {
	t.Helper()
	if err := os.Remove(m.running); err != nil {
		t.Fatal(err)
	}
}

// ClaimDevice is the one device of a claim's CDI spec: its name and what it gives a
// container.
type ClaimDevice struct {
	Name string
	Env  []string
	// Mounts are host:container paths.
	Mounts []string
}

// ReadClaimDevice reads the CDI spec that the driver wrote in dir for claim c, which
// must define one device of kind cdi.ClaimKind.
func ReadClaimDevice(t testing.TB, dir string, c *resourceapi.ResourceClaim) ClaimDevice {
	t.Helper()
	spec, err := cdi.Writer{Dir: dir}.Read(string(c.UID))
	if err != nil {
		t.Fatalf("claim %s/%s: %v", c.Namespace, c.Name, err)
	}
	if spec.Kind != cdi.ClaimKind || len(spec.Devices) != 1 {
		t.Fatalf("claim %s/%s: CDI spec %+v, want one %s device", c.Namespace, c.Name, spec, cdi.ClaimKind)
	}
	d := spec.Devices[0]
	out := ClaimDevice{Name: d.Name, Env: d.ContainerEdits.Env}
	for _, m := range d.ContainerEdits.Mounts {
		out.Mounts = append(out.Mounts, m.HostPath+":"+m.ContainerPath)
	}
	return out
}

// SpecRemoved fails the test unless claim c has no CDI spec in dir.
func SpecRemoved(t testing.TB, dir string, c *resourceapi.ResourceClaim) {
	t.Helper()
	if _, err := os.Stat(cdi.Writer{Dir: dir}.Path(string(c.UID))); !os.IsNotExist(err) {
		t.Fatalf("claim %s/%s: CDI spec left after unprepare (%v)", c.Namespace, c.Name, err)
	}
}
