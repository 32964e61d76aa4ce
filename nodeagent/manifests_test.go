package nodeagent

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia/nvidiatest"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// TestDeployManifestsGrantEnough applies the node agent of the kustomize base (rendered from
// the chart) and its namespace to the real API server and runs
// the agent as its ServiceAccount: publishing, pod listing and events must all be allowed
// by the shipped ClusterRole and admission policy.
func TestDeployManifestsGrantEnough(t *testing.T) {
	if env == nil {
		testenv.SkipOrFail(t, fmt.Errorf("no API server"))
	}
	ctx := testenv.Context(t, 60*time.Second)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(root, "deploy", "kustomize", "base")
	files, err := filepath.Glob(filepath.Join(base, "node-agent", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/kustomize/base/node-agent: %v", err)
	}
	files = append(files, filepath.Join(base, "namespace.yaml"))
	objs, err := env.DecodeFiles(files...)
	if err != nil {
		t.Fatal(err)
	}
	// Namespaces first, then everything else.
	for _, pass := range []bool{true, false} {
		for _, o := range objs {
			if _, isNS := o.(*corev1.Namespace); isNS == pass {
				if err := env.Client.Create(ctx, o); err != nil {
					t.Fatalf("create %T %s: %v", o, o.GetName(), err)
				}
			}
		}
	}

	// As the token of a pod bound to the node: the admission policy lets the agent write
	// only the node its token names.
	const node = "agent-rbac"
	sa := rest.CopyConfig(env.Config)
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:tessera-system:tessera-node-agent",
		Extra: map[string][]string{"authentication.kubernetes.io/node-name": {node}}}
	gpus := nvidiatest.DGXA100()
	procRoot := t.TempDir()
	h := startAs(t, sa, node, gpus, procRoot)
	assign := tesserav1.GPUAssignment{Node: h.node, Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{gpus.UUID(0)}, MemoryMiB: 100}}}
	pod := apitest.MakePod("rbac-0", "tessera-system").NodeName(h.node).Assignment(assign).Obj()
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	writeCgroup(t, procRoot, 77, "0::/kubepods/pod"+string(pod.UID)+"/"+strings.Repeat("cd", 32)+"\n")
	gpus.SetUsage(0, nvidiatest.Usage{UtilizationPercent: 50, MemoryUsedMiB: 200, Processes: map[uint32]uint64{77: 200}})

	eventually(t, "GPUNode and node fields published as the ServiceAccount", func() string {
		gn := h.gpuNode(t)
		var node corev1.Node
		if err := env.Client.Get(ctx, client.ObjectKey{Name: h.node}, &node); err != nil {
			return err.Error()
		}
		if gn == nil || len(gn.Status.Devices) != 8 || node.Labels[tesserav1.LabelGPUCount] != "8" {
			return "not yet"
		}
		return ""
	})
	eventually(t, "slice event recorded as the ServiceAccount", func() string {
		var events corev1.EventList
		if err := env.Client.List(ctx, &events, client.InNamespace("tessera-system")); err != nil {
			return err.Error()
		}
		for _, e := range events.Items {
			if e.Reason == ReasonSliceExceeded && e.InvolvedObject.UID == pod.UID {
				return ""
			}
		}
		return "no event"
	})
}
