package e2e

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/nodeagent/deviceplugin"
	"github.com/tessera-gpu/tessera/nodeagent/dra"
	"github.com/tessera-gpu/tessera/nodeagent/dra/dratest"
	"github.com/tessera-gpu/tessera/scheduler/snapshot/workloads"
)

// shareGang is the JobSet of claimGang: 2 replicated Jobs of 2 pods, one gang of 4.
const (
	shareGang     = "shares"
	shareGangPods = 4
	shareMemory   = "10Gi"
)

// claimGang runs a JobSet whose pods each claim a 10Gi share of one GPU through a
// ResourceClaimTemplate of device class gpu-share.tessera.dev: the resource claim
// controller makes a claim per pod, the node agents publish their GPUs as shared DRA
// devices, and Tessera binds the gang whole, each claim allocated to its pod's node
// with the share it consumes, the shares of a GPU within its memory. Once the JobSet
// completes, the claims are released and deleted.
func (s *scenario) claimGang() {
	template := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: TenantNamespace, Name: "gpu-share"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: apitest.GPUClaim("", TenantNamespace, 0, shareMemory).Spec}}
	s.create(template)
	job := Job(TenantNamespace, "", 2, 0, 0, 30*time.Second).Spec
	pod := &job.Template.Spec
	pod.SchedulerName = tesserav1.SchedulerName
	pod.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template.Name}}
	c := &pod.Containers[0]
	delete(c.Resources.Requests, tesserav1.ResourceNvidiaGPU)
	delete(c.Resources.Limits, tesserav1.ResourceNvidiaGPU)
	c.Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	jobSet := s.object("jobset.x-k8s.io/v1alpha2", "JobSet", shareGang, map[string]any{
		"replicatedJobs": []any{map[string]any{"name": "workers", "replicas": int64(2), "template": map[string]any{"spec": s.fields(&job)}}},
	})
	s.create(jobSet)
	selector := client.MatchingLabels{workloads.LabelJobSetName: shareGang}
	s.wait(2*time.Minute, "the share gang bound whole", func() error { return s.bound(selector, shareGangPods) })
	s.gangGroup(jobSet, shareGangPods)
	pods, err := s.pods(selector)
	if err != nil {
		s.t.Fatal(err)
	}
	devices := s.gpuDevices()
	claims := s.checkShares(pods, devices)
	s.tl.Logf("JobSet %s: %d of %d pods bound whole, each with a %s share of a GPU claimed from gpu-share.tessera.dev and allocated by Tessera",
		shareGang, len(pods), shareGangPods, shareMemory)
	s.prepareShare(&pods[0], claims[0], devices)

	s.wait(2*time.Minute, "the share JobSet completed", func() error {
		if err := s.c.Client.Get(s.ctx, client.ObjectKeyFromObject(jobSet), jobSet); err != nil {
			return err
		}
		if completed, _ := condition(jobSet, "Completed"); completed != "True" {
			return fmt.Errorf("JobSet %s not Completed yet (%q)", shareGang, completed)
		}
		return nil
	})
	s.wait(time.Minute, "the finished pods' claims deleted", func() error {
		var left []string
		for _, c := range claims {
			if err := s.c.Client.Get(s.ctx, client.ObjectKeyFromObject(c), &resourcev1.ResourceClaim{}); client.IgnoreNotFound(err) != nil {
				return err
			} else if err == nil {
				left = append(left, c.Name)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("claims %v still there", left)
		}
		return nil
	})
	s.tl.Logf("JobSet %s completed: its %d claims released and deleted", shareGang, len(claims))
	s.delete(jobSet)
	s.delete(template)
	s.wait(time.Minute, "the share JobSet's pods gone", func() error {
		if pods, err := s.pods(selector); err != nil || len(pods) > 0 {
			return fmt.Errorf("%d pods left (%v)", len(pods), err)
		}
		return nil
	})
}

// gpuDevices are the devices the node agents publish, by pool/device.
func (s *scenario) gpuDevices() map[string]resourcev1.Device {
	s.t.Helper()
	var slices resourcev1.ResourceSliceList
	if err := s.c.Client.List(s.ctx, &slices); err != nil {
		s.t.Fatal(err)
	}
	devices := map[string]resourcev1.Device{}
	for _, sl := range slices.Items {
		if sl.Spec.Driver != tesserav1.DRADriver {
			continue
		}
		for _, d := range sl.Spec.Devices {
			devices[sl.Spec.Pool.Name+"/"+d.Name] = d
		}
	}
	return devices
}

// checkShares checks the claim of each pod: allocated by Tessera on the pod's node with
// a shareID and the share it consumes, reserved for the pod and protected from deletion
// while allocated; and, over all claims, no GPU holding more than the memory its device
// publishes. It returns the claims.
func (s *scenario) checkShares(pods []corev1.Pod, devices map[string]resourcev1.Device) []*resourcev1.ResourceClaim {
	s.t.Helper()
	want := resource.MustParse(shareMemory)
	used := map[string]*resource.Quantity{}
	var claims []*resourcev1.ResourceClaim
	for _, p := range pods {
		name := podClaimName(&p, "gpu")
		if name == "" {
			s.t.Fatalf("pod %s: no ResourceClaim made for its claim gpu: status.resourceClaimStatuses %v", p.Name, p.Status.ResourceClaimStatuses)
		}
		c := &resourcev1.ResourceClaim{}
		if err := s.c.Client.Get(s.ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, c); err != nil {
			s.t.Fatal(err)
		}
		claims = append(claims, c)
		if c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != 1 {
			s.t.Fatalf("claim %s of pod %s: allocation %+v, want one device", name, p.Name, c.Status.Allocation)
		}
		r := c.Status.Allocation.Devices.Results[0]
		consumed := r.ConsumedCapacity[tesserav1.DeviceCapacityMemory]
		if r.Driver != tesserav1.DRADriver || r.Pool != p.Spec.NodeName || r.ShareID == nil || consumed.Cmp(want) != 0 {
			s.t.Fatalf("claim %s of pod %s on %s: driver %s pool %s device %s shareID %v consumed %s; want %s, pool %s, a shareID, %s",
				name, p.Name, p.Spec.NodeName, r.Driver, r.Pool, r.Device, r.ShareID, consumed.String(), tesserav1.DRADriver, p.Spec.NodeName, shareMemory)
		}
		if len(c.Status.ReservedFor) != 1 || c.Status.ReservedFor[0].UID != p.UID || !slices.Contains(c.Finalizers, resourcev1.Finalizer) {
			s.t.Fatalf("claim %s reserved for %v with finalizers %v, want pod %s (%s) and %s", name, c.Status.ReservedFor, c.Finalizers, p.Name, p.UID, resourcev1.Finalizer)
		}
		key := r.Pool + "/" + r.Device
		if used[key] == nil {
			used[key] = &resource.Quantity{}
		}
		used[key].Add(consumed)
	}
	for key, u := range used {
		c, ok := devices[key].Capacity[tesserav1.DeviceCapacityMemory]
		if !ok || u.Cmp(c.Value) > 0 {
			s.t.Fatalf("GPU %s holds %s of shares, publishes %s of memory", key, u.String(), c.Value.String())
		}
		s.tl.Logf("GPU %s: %s of its %s in shares", key, u.String(), c.Value.String())
	}
	return claims
}

// prepareShare plays the kubelet of pod p's node, which kwok does not run: it finds the
// node agent's DRA plugin through its registration socket, prepares claim c and checks
// the CDI device that holds the container to its share through MPS, then unprepares it.
func (s *scenario) prepareShare(p *corev1.Pod, c *resourcev1.ResourceClaim, devices map[string]resourcev1.Device) {
	s.t.Helper()
	dirs := s.c.NodeDirs(p.Spec.NodeName)
	kubelet := dratest.Connect(s.t, s.ctx, dirs.Registry)
	r := kubelet.Prepare(s.t, c)
	if r.Error != "" || len(r.Devices) != 1 {
		s.t.Fatalf("prepare claim %s of pod %s: %+v, want one device", c.Name, p.Name, r)
	}
	res := c.Status.Allocation.Devices.Results[0]
	uuid := devices[res.Pool+"/"+res.Device].Attributes[tesserav1.DeviceAttributeUUID].StringValue
	if uuid == nil {
		s.t.Fatalf("device %s/%s publishes no %s attribute", res.Pool, res.Device, tesserav1.DeviceAttributeUUID)
	}
	dev := dratest.ReadClaimDevice(s.t, dirs.CDI, c)
	want := resource.MustParse(shareMemory)
	limit := fmt.Sprintf("%s=%s=%dM", deviceplugin.EnvMPSMemoryLimit, *uuid, want.Value()>>20)
	if !slices.Contains(dev.Env, limit) || !slices.Contains(dev.Env, dra.EnvMPSPipeDirectory+"="+dirs.MPSPipe) ||
		!slices.ContainsFunc(r.Devices[0].CdiDeviceIds, func(id string) bool { return strings.HasSuffix(id, "="+dev.Name) }) {
		s.t.Fatalf("claim %s prepared as CDI devices %v, its device %s with environment %v; want %s and the MPS pipe directory %s",
			c.Name, r.Devices[0].CdiDeviceIds, dev.Name, dev.Env, limit, dirs.MPSPipe)
	}
	kubelet.Unprepare(s.t, c)
	dratest.SpecRemoved(s.t, dirs.CDI, c)
	s.tl.Logf("the node agent of %s prepared claim %s as the kubelet asked: CDI devices %v, %s; unprepared it",
		p.Spec.NodeName, c.Name, r.Devices[0].CdiDeviceIds, limit)
}

// podClaimName is the ResourceClaim made for the pod's claim named claim, or "".
func podClaimName(p *corev1.Pod, claim string) string {
	for _, st := range p.Status.ResourceClaimStatuses {
		if st.Name == claim && st.ResourceClaimName != nil {
			return *st.ResourceClaimName
		}
	}
	return ""
}
