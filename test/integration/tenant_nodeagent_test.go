package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/nodeagent/publish"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// nodeNameExtra is the user extra a node-bound service account token carries: the name
// of the node its pod is bound to.
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// applyBase creates Tessera's namespace and the objects of the kustomize base's files
// (paths under deploy/kustomize/base) in the shared API server.
func applyBase(ctx context.Context, t *testing.T, e *testenv.Env, files ...string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	must(t, "repository root", err)
	must(t, "namespace "+tessNS, client.IgnoreAlreadyExists(e.Client.Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tessNS}})))
	for i, f := range files {
		files[i] = filepath.Join(root, "deploy", "kustomize", "base", filepath.FromSlash(f))
	}
	must(t, "apply "+strings.Join(files, ", "), e.Apply(ctx, files...))
}

// asServiceAccount is a REST config acting as Tessera's ServiceAccount sa, with the node
// name of a node-bound token when node is not "".
func asServiceAccount(e *testenv.Env, sa, node string) *rest.Config {
	var extra map[string][]string
	if node != "" {
		extra = map[string][]string{nodeNameExtra: {node}}
	}
	return e.ServiceAccountConfig("system:serviceaccount:"+tessNS+":"+sa, extra)
}

// agentOn is the node agent's publisher for node, authenticated as the agent on tokenNode.
func agentOn(t *testing.T, e *testenv.Env, tokenNode, node string) *publish.Publisher {
	t.Helper()
	cfg := asServiceAccount(e, "tessera-node-agent", tokenNode)
	kube, err := kubernetes.NewForConfig(cfg)
	must(t, "client", err)
	dyn, err := dynamic.NewForConfig(cfg)
	must(t, "dynamic client", err)
	return &publish.Publisher{Kube: kube, Dynamic: dyn, NodeName: node}
}

// awaitRefusal retries try, a request the API server refuses once it has seen new RBAC
// and admission policies, until it fails naming want; it returns that error.
func awaitRefusal(ctx context.Context, t *testing.T, what, want string, try func() error) error {
	t.Helper()
	for {
		err := try()
		if err != nil && strings.Contains(err.Error(), want) {
			return err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: never refused with %q (last: %v)", what, want, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestTenantNodeAgentOtherNode: the node agent's ServiceAccount, as the kustomize base
// grants and limits it, writes its own Node (labels, gpu-memory capacity) and GPUNode
// (object and status) and ResourceSlice as the agent does; the same writes to another
// node, its status, its GPUNode or its ResourceSlice are refused by the admission policy,
// and so is every write with a token that names no node.
func TestTenantNodeAgentOtherNode(t *testing.T) {
	e := requireEnv(t)
	ctx := testenv.Context(t, time.Minute)
	applyBase(ctx, t, e, "node-agent/rbac.yaml", "node-agent/admission-policy.yaml")
	for _, n := range []string{"node-a", "node-b"} {
		must(t, "node "+n, client.IgnoreAlreadyExists(testenv.CreateNode(ctx, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})))
	}
	must(t, "GPUNode node-b", client.IgnoreAlreadyExists(e.Client.Create(ctx, &tesserav1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}})))

	onA := agentOn(t, e, "node-a", "node-a")
	status := tesserav1.GPUNodeStatus{DriverVersion: "570.86.15", SharesPerGPU: 4}
	fields := publish.NodeFields{Model: "NVIDIA A100-SXM4-80GB", Count: 2, MemoryMiB: 2 * 81920, AllocatableMiB: 2 * 81920}
	other := "tessera-node-agent on node node-a may write only its own Node, GPUNode and ResourceSlices (node-a), not "

	// The policy and the RBAC reach the API server's informers a moment after they are
	// created: wait for the refusal of another node's labels.
	b := corev1ac.Node("node-b").WithLabels(map[string]string{tesserav1.LabelGPUCount: "8"})
	dryRun := metav1.ApplyOptions{FieldManager: publish.FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}}
	err := awaitRefusal(ctx, t, "labels of node-b", other+"nodes node-b", func() error {
		_, err := onA.Kube.CoreV1().Nodes().Apply(ctx, b, dryRun)
		return err
	})
	refused(t, "labels of node-b", err)

	// Its own node, as the agent writes it; its GPUNode is created by the apply.
	must(t, "node-a labels and capacity", onA.Node(ctx, fields))
	must(t, "GPUNode node-a", onA.GPUNode(ctx, status))
	var node corev1.Node
	must(t, "get node-a", e.Client.Get(ctx, client.ObjectKey{Name: "node-a"}, &node))
	if node.Labels[tesserav1.LabelGPUCount] != "2" || node.Status.Capacity.Name(tesserav1.ResourceGPUMemory, resource.DecimalSI).Value() != 2*81920 {
		t.Errorf("node-a: labels %v, capacity %v: the agent's writes did not land", node.Labels, node.Status.Capacity)
	}
	var gn tesserav1.GPUNode
	must(t, "get GPUNode node-a", e.Client.Get(ctx, client.ObjectKey{Name: "node-a"}, &gn))
	if gn.Status.DriverVersion != status.DriverVersion || len(gn.OwnerReferences) != 1 || gn.OwnerReferences[0].Name != "node-a" {
		t.Errorf("GPUNode node-a: owners %v, status %+v", gn.OwnerReferences, gn.Status)
	}

	// Another node: its labels, its status, its GPUNode and the GPUNode's status.
	apply := metav1.ApplyOptions{FieldManager: publish.FieldManager, Force: true}
	_, err = onA.Kube.CoreV1().Nodes().ApplyStatus(ctx, corev1ac.Node("node-b").WithStatus(corev1ac.NodeStatus().
		WithCapacity(corev1.ResourceList{tesserav1.ResourceGPUMemory: resource.MustParse("1000000")})), apply)
	refused(t, "status of node-b", err, other+"nodes/status node-b")
	refused(t, "node-b as its publisher", agentOn(t, e, "node-a", "node-b").Node(ctx, fields), other+"nodes node-b")
	gpuNodeB := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": tesserav1.GroupVersion.String(), "kind": "GPUNode",
		"metadata": map[string]any{"name": "node-b", "labels": map[string]any{"forged": "true"}},
		"status":   map[string]any{"sharesPerGPU": int64(64)},
	}}
	gpuNodes := onA.Dynamic.Resource(publish.GPUNodes)
	_, err = gpuNodes.Apply(ctx, "node-b", gpuNodeB, apply)
	refused(t, "GPUNode node-b", err, other+"gpunodes node-b")
	_, err = gpuNodes.ApplyStatus(ctx, "node-b", gpuNodeB, apply)
	refused(t, "status of GPUNode node-b", err, other+"gpunodes/status node-b")

	// ResourceSlices: its own node's pool, not another's.
	slices := onA.Kube.ResourceV1().ResourceSlices()
	for _, node := range []string{"node-a", "node-b"} {
		s := apitest.GPUSlice(node, 1, 81920, 1024, false, func(i int) string { return apitest.GPUUUID(node, i) })
		_, err := slices.Create(ctx, s, metav1.CreateOptions{})
		if node == "node-b" {
			refused(t, "ResourceSlice of node-b", err, other+"resourceslices "+s.Name)
			continue
		}
		must(t, "ResourceSlice of node-a", err)
		must(t, "delete the ResourceSlice of node-a", slices.Delete(ctx, s.Name, metav1.DeleteOptions{}))
	}

	// A token that names no node writes no node, its own included.
	noNode := agentOn(t, e, "", "node-a")
	refused(t, "node-a without a node name", noNode.Node(ctx, fields), "tessera-node-agent may write nodes node-a only with the service account token of a pod bound to a node")
	refused(t, "GPUNode node-a without a node name", noNode.GPUNode(ctx, status), "tessera-node-agent may write gpunodes node-a only with")
}
