package publish

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// FieldManager is the server-side apply field manager of everything the agent writes.
const FieldManager = "tessera-node-agent"

// GPUNodes is the GPUNode resource.
var GPUNodes = tesserav1.GroupVersion.WithResource("gpunodes")

// Publisher writes one node's GPUNode and Node fields.
type Publisher struct {
	Kube     kubernetes.Interface
	Dynamic  dynamic.Interface
	NodeName string

	mu         sync.Mutex
	ownedBy    types.UID // the Node UID the GPUNode's owner reference was applied for
	seeded     bool
	conditions []metav1.Condition
}

func (p *Publisher) applyOptions() metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
}

func (p *Publisher) node(ctx context.Context) (*corev1.Node, error) {
	n, err := p.Kube.CoreV1().Nodes().Get(ctx, p.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("node %q not found: --node-name (NODE_NAME, from the downward API's spec.nodeName) must name the node the agent runs on", p.NodeName)
	}
	if err != nil {
		return nil, fmt.Errorf("get node %s: %w", p.NodeName, err)
	}
	return n, nil
}

// GPUNode applies the GPUNode: its owner reference to the Node, then its status. The
// status' conditions keep their lastTransitionTime while their status does not change.
func (p *Publisher) GPUNode(ctx context.Context, status tesserav1.GPUNodeStatus) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	node, err := p.node(ctx)
	if err != nil {
		return err
	}
	res := p.Dynamic.Resource(GPUNodes)
	if node.UID != p.ownedBy {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": tesserav1.GroupVersion.String(),
			"kind":       "GPUNode",
			"metadata": map[string]any{
				"name": p.NodeName,
				"ownerReferences": []any{map[string]any{
					"apiVersion": "v1", "kind": "Node", "name": node.Name, "uid": string(node.UID),
				}},
			},
		}}
		if _, err := res.Apply(ctx, p.NodeName, u, p.applyOptions()); err != nil {
			return fmt.Errorf("apply GPUNode %s: %w", p.NodeName, err)
		}
		p.ownedBy = node.UID
	}
	if !p.seeded {
		// Keep the transition times of a previous agent's conditions.
		if cur, err := res.Get(ctx, p.NodeName, metav1.GetOptions{}); err == nil {
			var gn tesserav1.GPUNode
			if err := runtimeFromUnstructured(cur, &gn); err == nil {
				p.conditions = gn.Status.Conditions
			}
		}
		p.seeded = true
	}
	for _, c := range status.Conditions {
		meta.SetStatusCondition(&p.conditions, c)
	}
	status.Conditions = append([]metav1.Condition(nil), p.conditions...)
	body, err := json.Marshal(status)
	if err != nil {
		return err
	}
	var statusMap map[string]any
	if err := json.Unmarshal(body, &statusMap); err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": tesserav1.GroupVersion.String(),
		"kind":       "GPUNode",
		"metadata":   map[string]any{"name": p.NodeName},
		"status":     statusMap,
	}}
	if _, err := res.ApplyStatus(ctx, p.NodeName, u, p.applyOptions()); err != nil {
		return fmt.Errorf("apply GPUNode %s status: %w", p.NodeName, err)
	}
	return nil
}

// Pods are the pods' GPU memory the GPUNode's status holds (a previous agent's), none
// when there is no GPUNode yet.
func (p *Publisher) Pods(ctx context.Context) ([]tesserav1.GPUPodMemory, error) {
	cur, err := p.Dynamic.Resource(GPUNodes).Get(ctx, p.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get GPUNode %s: %w", p.NodeName, err)
	}
	var gn tesserav1.GPUNode
	if err := runtimeFromUnstructured(cur, &gn); err != nil {
		return nil, fmt.Errorf("read GPUNode %s: %w", p.NodeName, err)
	}
	return gn.Status.Pods, nil
}

func runtimeFromUnstructured(u *unstructured.Unstructured, into *tesserav1.GPUNode) error {
	b, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// NodeFields is what the agent sets on the Node.
type NodeFields struct {
	// Model is the GPU model (sanitised into a label value); empty removes the label.
	Model string
	// Count is the number of GPUs; 0 removes the label.
	Count int
	// MemoryMiB is the capacity of tessera.dev/gpu-memory; AllocatableMiB leaves out
	// unhealthy GPUs.
	MemoryMiB, AllocatableMiB int64
}

// Node applies the labels and the gpu-memory capacity.
func (p *Publisher) Node(ctx context.Context, f NodeFields) error {
	if _, err := p.node(ctx); err != nil {
		// Apply would create a missing Node; refuse instead.
		return err
	}
	labels := map[string]string{}
	if v := LabelValue(f.Model); v != "" {
		labels[tesserav1.LabelGPUModel] = v
	}
	if f.Count > 0 {
		labels[tesserav1.LabelGPUCount] = strconv.Itoa(f.Count)
	}
	nodes := p.Kube.CoreV1().Nodes()
	if _, err := nodes.Apply(ctx, corev1ac.Node(p.NodeName).WithLabels(labels), p.applyOptions()); err != nil {
		return fmt.Errorf("apply labels of node %s: %w", p.NodeName, err)
	}
	status := corev1ac.NodeStatus().
		WithCapacity(corev1.ResourceList{tesserav1.ResourceGPUMemory: *resource.NewQuantity(f.MemoryMiB, resource.DecimalSI)}).
		WithAllocatable(corev1.ResourceList{tesserav1.ResourceGPUMemory: *resource.NewQuantity(f.AllocatableMiB, resource.DecimalSI)})
	if _, err := nodes.ApplyStatus(ctx, corev1ac.Node(p.NodeName).WithStatus(status), p.applyOptions()); err != nil {
		return fmt.Errorf("apply %s capacity of node %s: %w", tesserav1.ResourceGPUMemory, p.NodeName, err)
	}
	return nil
}

// LabelValue turns a GPU model name into a label value: "NVIDIA A100-SXM4-80GB" becomes
// "NVIDIA-A100-SXM4-80GB".
func LabelValue(model string) string {
	var b strings.Builder
	for _, r := range model {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	v := b.String()
	if len(v) > validation.LabelValueMaxLength {
		v = v[:validation.LabelValueMaxLength]
	}
	return strings.Trim(v, "-_.")
}
