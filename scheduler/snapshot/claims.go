package snapshot

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/dynamic-resource-allocation/cel"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Device is one GPU that the node agent publishes in its node's ResourceSlice pool.
type Device struct {
	Node, Name, UUID string
	// Shareable: the device takes several allocations (memory shares).
	Shareable bool
	// MemoryMiB is the device's memory capacity; StepMiB and MinMiB round a share up as
	// the capacity's request policy says (0 when it says nothing), and WholeMiB is what
	// a request that names no memory consumes (the policy's default, else MemoryMiB).
	MemoryMiB, StepMiB, MinMiB, WholeMiB int64
	cel                                  cel.Device
}

// Devices are the published GPUs by UUID, and by node and UUID.
type Devices struct {
	ByUUID map[string]*Device
	byNode map[string]map[string]*Device
}

// Of returns the device on node whose GPU has uuid, or nil.
func (d *Devices) Of(node, uuid string) *Device {
	if d == nil {
		return nil
	}
	return d.byNode[node][uuid]
}

// IndexDevices reads the devices of tesserav1.DRADriver out of ResourceSlices. Of a
// pool published in several generations, the newest counts.
func IndexDevices(rs []*resourcev1.ResourceSlice) *Devices {
	newest := map[string]int64{}
	for _, s := range rs {
		if s.Spec.Driver == tesserav1.DRADriver {
			newest[s.Spec.Pool.Name] = max(newest[s.Spec.Pool.Name], s.Spec.Pool.Generation)
		}
	}
	out := &Devices{ByUUID: map[string]*Device{}, byNode: map[string]map[string]*Device{}}
	for _, s := range rs {
		if s.Spec.Driver != tesserav1.DRADriver || s.Spec.Pool.Generation != newest[s.Spec.Pool.Name] {
			continue
		}
		node := s.Spec.Pool.Name
		if s.Spec.NodeName != nil && *s.Spec.NodeName != "" {
			node = *s.Spec.NodeName
		}
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			uuid := d.Attributes[tesserav1.DeviceAttributeUUID].StringValue
			if uuid == nil || *uuid == "" {
				continue
			}
			dev := &Device{Node: node, Name: d.Name, UUID: *uuid, Shareable: d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations,
				cel: cel.Device{Driver: s.Spec.Driver, AllowMultipleAllocations: d.AllowMultipleAllocations, Attributes: d.Attributes, Capacity: d.Capacity}}
			if c, ok := d.Capacity[tesserav1.DeviceCapacityMemory]; ok {
				dev.MemoryMiB = mib(c.Value.Value())
				dev.WholeMiB = dev.MemoryMiB
				if p := c.RequestPolicy; p != nil && p.Default != nil {
					dev.WholeMiB = p.Default.Value() >> 20
				}
				if p := c.RequestPolicy; p != nil && p.ValidRange != nil {
					if p.ValidRange.Step != nil {
						dev.StepMiB = mib(p.ValidRange.Step.Value())
					}
					if p.ValidRange.Min != nil {
						dev.MinMiB = mib(p.ValidRange.Min.Value())
					}
				}
			}
			out.ByUUID[dev.UUID] = dev
			if out.byNode[node] == nil {
				out.byNode[node] = map[string]*Device{}
			}
			out.byNode[node][dev.UUID] = dev
		}
	}
	return out
}

// mib is bytes in MiB, rounded up.
func mib(bytes int64) int64 { return (bytes + 1<<20 - 1) >> 20 }

// ShareMiB is what a share of req MiB takes on d: rounded up to the capacity's step
// and at least its minimum.
func (d *Device) ShareMiB(req int64) int64 {
	if d.StepMiB > 0 {
		req = (req + d.StepMiB - 1) / d.StepMiB * d.StepMiB
	}
	return max(req, d.MinMiB)
}

// ClaimNames are the names of the ResourceClaims a pod uses, in spec order; "" where a
// claim made from a template has not been created yet.
func ClaimNames(p *corev1.Pod) []string {
	out := make([]string, 0, len(p.Spec.ResourceClaims))
	for _, pc := range p.Spec.ResourceClaims {
		name := ""
		if pc.ResourceClaimName != nil {
			name = *pc.ResourceClaimName
		} else {
			for _, st := range p.Status.ResourceClaimStatuses {
				if st.Name == pc.Name && st.ResourceClaimName != nil {
					name = *st.ResourceClaimName
				}
			}
		}
		out = append(out, name)
	}
	return out
}

// claimState is what the builder knows of resource claims: the objects, the device
// classes, the published devices, and what each device class and selector accepts.
type claimState struct {
	claims  map[string]*resourcev1.ResourceClaim // by namespace/name
	classes map[string]*resourcev1.DeviceClass
	slices  map[string]*resourcev1.ResourceSlice
	// users are the pods (namespace/name) that use each claim (namespace/name).
	users map[string]map[string]bool
	// devices indexes slices (nil: to be indexed again); accepts caches, per device
	// class and request selectors, the UUIDs they accept.
	devices *Devices
	accepts map[string]map[string]bool
}

func newClaimState() claimState {
	return claimState{claims: map[string]*resourcev1.ResourceClaim{}, classes: map[string]*resourcev1.DeviceClass{},
		slices: map[string]*resourcev1.ResourceSlice{}, users: map[string]map[string]bool{}, accepts: map[string]map[string]bool{}}
}

// AddResourceClaim adds a ResourceClaim; the jobs of the pods that use it are
// assembled again. A nil claim is ignored.
func (b *Builder) AddResourceClaim(c *resourcev1.ResourceClaim) {
	if c != nil {
		key := c.Namespace + "/" + c.Name
		b.dra.claims[key] = c
		b.claimChanged(key)
	}
}

// RemoveResourceClaim takes a ResourceClaim out.
func (b *Builder) RemoveResourceClaim(namespace, name string) {
	key := namespace + "/" + name
	delete(b.dra.claims, key)
	b.claimChanged(key)
}

// AddResourceSlice adds a ResourceSlice; every job that uses claims is assembled again
// at the next Build.
// A nil slice is ignored.
func (b *Builder) AddResourceSlice(s *resourcev1.ResourceSlice) {
	if s != nil {
		b.dra.slices[s.Name] = s
		b.devicesChanged()
	}
}

// RemoveResourceSlice takes a ResourceSlice out.
func (b *Builder) RemoveResourceSlice(name string) {
	delete(b.dra.slices, name)
	b.devicesChanged()
}

// AddDeviceClass adds a DeviceClass. A nil class is ignored.
func (b *Builder) AddDeviceClass(c *resourcev1.DeviceClass) {
	if c != nil {
		b.dra.classes[c.Name] = c
		b.devicesChanged()
	}
}

// RemoveDeviceClass takes a DeviceClass out.
func (b *Builder) RemoveDeviceClass(name string) {
	delete(b.dra.classes, name)
	b.devicesChanged()
}

func (b *Builder) claimChanged(key string) {
	for pod := range b.dra.users[key] {
		if in, ok := b.pods[pod]; ok {
			b.dirty[in.job] = true
		}
	}
}

// devicesChanged drops the device index; the jobs that use claims are assembled again
// when it is rebuilt (Devices), once for any number of changes: the informer's first
// list adds every ResourceSlice one by one, and marking every claim's pods for each
// would cost slices times claims.
func (b *Builder) devicesChanged() {
	b.dra.devices = nil
	clear(b.dra.accepts)
}

// useClaims records which claims pod p (namespace/name key) uses; p nil forgets it.
func (b *Builder) useClaims(key string, old, p *corev1.Pod) {
	if old != nil {
		for _, name := range ClaimNames(old) {
			ck := old.Namespace + "/" + name
			delete(b.dra.users[ck], key)
			if len(b.dra.users[ck]) == 0 {
				delete(b.dra.users, ck)
			}
		}
	}
	if p == nil {
		return
	}
	for _, name := range ClaimNames(p) {
		ck := p.Namespace + "/" + name
		if b.dra.users[ck] == nil {
			b.dra.users[ck] = map[string]bool{}
		}
		b.dra.users[ck][key] = true
	}
}

// Devices returns the published GPUs. Indexing them again (after a change of the
// slices or device classes) marks the jobs that use claims for assembly.
func (b *Builder) Devices() *Devices {
	if b.dra.devices == nil {
		b.dra.devices = IndexDevices(slices.Collect(maps.Values(b.dra.slices)))
		for key := range b.dra.users {
			b.claimChanged(key)
		}
	}
	return b.dra.devices
}

// claimGPU sets t's GPU request from the resource claims of its pod p: the whole GPUs
// their requests count, or the one share of GPU memory one request asks, on the GPUs
// that their device classes and selectors accept.
func (s *build) claimGPU(p *corev1.Pod, t *framework.Task) error {
	bad := func(field, format string, args ...any) error {
		return objErr("Pod", p.Namespace, p.Name, field, format, args...)
	}
	if t.GPU.Any() && t.GPU.Claim == nil { // (a request from claims is set again)
		return bad("spec.resourceClaims", "asks GPUs both through resource claims and as extended resources; ask them one way")
	}
	devs := s.Builder.Devices()
	req := framework.GPURequest{Claim: &framework.ClaimRequest{}}
	var allowed map[string]bool
	names := ClaimNames(p)
	for i, name := range names {
		field := fmt.Sprintf("spec.resourceClaims[%d]", i)
		if name == "" {
			return bad(field, "its ResourceClaim from template %q is not created yet; it is scheduled once the claim exists", ptrOr(p.Spec.ResourceClaims[i].ResourceClaimTemplateName))
		}
		c := s.Builder.dra.claims[p.Namespace+"/"+name]
		if c == nil {
			return bad(field, "ResourceClaim %s/%s does not exist; create it, or wait for its template's claim", p.Namespace, name)
		}
		for j := range c.Spec.Devices.Requests {
			r := &c.Spec.Devices.Requests[j]
			rfield := fmt.Sprintf("ResourceClaim %s spec.devices.requests[%d] (%s)", name, j, r.Name)
			if r.FirstAvailable != nil {
				if len(names) > 1 || len(c.Spec.Devices.Requests) > 1 {
					return bad(field, "%s: a firstAvailable request must be the pod's only GPU request; put the others in its subrequests or in another pod", rfield)
				}
				alts, want, err := s.alternatives(r, devs)
				if err != nil {
					return bad(field, "%s: %v", rfield, err)
				}
				req.Count, req.MemoryMiB, req.Claim.Alternatives = want.Count, want.MemoryMiB, alts
				allowed = intersect(allowed, unite(alts))
				continue
			}
			if r.Exactly == nil {
				return bad(field, "%s: name a deviceClassName under exactly or firstAvailable", rfield)
			}
			acc, one, err := s.exact(r.Exactly, devs)
			if err != nil {
				return bad(field, "%s: %v", rfield, err)
			}
			if len(acc) == 0 && len(devs.ByUUID) > 0 {
				return bad(field, "%s: %s", rfield, acceptsNone(r.Exactly.DeviceClassName))
			}
			if one.MemoryMiB > 0 {
				if req.Count > 0 || req.MemoryMiB > 0 {
					return bad(field, "%s: a share of GPU memory must be the pod's only GPU request, of count 1", rfield)
				}
				req.MemoryMiB = one.MemoryMiB
			} else {
				if req.MemoryMiB > 0 {
					return bad(field, "%s: a share of GPU memory must be the pod's only GPU request", rfield)
				}
				req.Count += one.Count
			}
			allowed = intersect(allowed, acc)
		}
		for ki := range c.Spec.Devices.Constraints {
			k := &c.Spec.Devices.Constraints[ki]
			values, err := constraintValues(k, c, len(names), devs)
			if err != nil {
				return bad(field, "ResourceClaim %s spec.devices.constraints[%d]: %v", name, ki, err)
			}
			switch {
			case values == nil:
			case k.MatchAttribute != nil:
				req.Claim.Match = matchBoth(req.Claim.Match, values)
			default:
				req.Claim.Distinct = append(req.Claim.Distinct, values)
			}
			if values != nil {
				allowed = intersect(allowed, keySet(values))
			}
		}
	}
	for i, alt := range req.Claim.Alternatives { // (within the constraints)
		req.Claim.Alternatives[i] = intersect(alt, allowed)
	}
	if len(allowed) < len(devs.ByUUID) || req.Claim.Match != nil || req.Claim.Distinct != nil || req.Claim.Alternatives != nil {
		req.Claim.Allowed = allowed
		if allowed == nil {
			req.Claim.Allowed = map[string]bool{}
		}
	}
	t.GPU = req
	return nil
}

// exact is what one exact request asks: the GPUs its device class and selectors
// accept, and their count or, for a share, its memory as those GPUs round it.
func (s *build) exact(e *resourcev1.ExactDeviceRequest, devs *Devices) (map[string]bool, framework.GPURequest, error) {
	var one framework.GPURequest
	acc, err := s.accepts(e, devs)
	if err != nil {
		return nil, one, err
	}
	switch {
	case e.AdminAccess != nil && *e.AdminAccess:
		return nil, one, fmt.Errorf("adminAccess is not granted on %s devices", tesserav1.DRADriver)
	case e.AllocationMode == resourcev1.DeviceAllocationModeAll:
		return nil, one, fmt.Errorf("allocationMode All is not supported; ask an exact count")
	}
	one.Count = int(max(e.Count, 1))
	if q, ok := ShareRequestMiB(e); ok {
		if one.Count != 1 {
			return nil, one, fmt.Errorf("a share of GPU memory must be of count 1")
		}
		one.Count, one.MemoryMiB = 0, shareMiB(q, acc, devs)
	}
	return acc, one, nil
}

// alternatives are the GPUs each subrequest of a firstAvailable request accepts, in
// its order, and what each asks: the same count of whole GPUs, or the same share, in
// every subrequest (Tessera queues and charges a pod for one request, whichever
// subrequest serves it).
func (s *build) alternatives(r *resourcev1.DeviceRequest, devs *Devices) ([]map[string]bool, framework.GPURequest, error) {
	var want framework.GPURequest
	var alts []map[string]bool
	for i, sub := range r.FirstAvailable {
		acc, one, err := s.exact(ExactOf(&sub), devs)
		if err != nil {
			return nil, want, fmt.Errorf("firstAvailable[%d] (%s): %w", i, sub.Name, err)
		}
		if i == 0 {
			want = one
		} else if one.Count != want.Count || (one.MemoryMiB > 0) != (want.MemoryMiB > 0) {
			return nil, want, fmt.Errorf("firstAvailable[%d] (%s) asks %s where firstAvailable[0] asks %s; Tessera takes subrequests that ask the same count of GPUs, or each a share",
				i, sub.Name, asks(one), asks(want))
		}
		want.MemoryMiB = max(want.MemoryMiB, one.MemoryMiB)
		alts = append(alts, acc)
	}
	if len(unite(alts)) == 0 && len(devs.ByUUID) > 0 {
		return nil, want, fmt.Errorf("no subrequest: %s", acceptsNone(r.FirstAvailable[0].DeviceClassName))
	}
	return alts, want, nil
}

// acceptsNone says that a request's class and selectors accept no published GPU.
func acceptsNone(class string) string {
	return fmt.Sprintf("device class %q and its selectors accept no %s device; Tessera allocates only %s devices (device classes %s, %s)",
		class, tesserav1.DRADriver, tesserav1.DRADriver, tesserav1.DeviceClassGPU, tesserav1.DeviceClassGPUShare)
}

// ExactOf is a firstAvailable request's subrequest as the exact request it stands for.
func ExactOf(sub *resourcev1.DeviceSubRequest) *resourcev1.ExactDeviceRequest {
	return &resourcev1.ExactDeviceRequest{DeviceClassName: sub.DeviceClassName, Selectors: sub.Selectors,
		AllocationMode: sub.AllocationMode, Count: sub.Count, Capacity: sub.Capacity, Tolerations: sub.Tolerations}
}

// asks says what a request asks, for messages.
func asks(r framework.GPURequest) string {
	if r.MemoryMiB > 0 {
		return "a share"
	}
	return fmt.Sprintf("%d GPUs", r.Count)
}

// unite is the union of sets.
func unite(sets []map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, s := range sets {
		for k := range s {
			out[k] = true
		}
	}
	return out
}

// constraintValues is the value of the attribute a claim's matchAttribute or
// distinctAttribute constraint names, for each published GPU that has it. Tessera
// places a pod's GPUs as one set, so it takes a constraint that spans the claim's every
// request, in the pod's only claim; a constraint over some requests only is refused.
func constraintValues(k *resourcev1.DeviceConstraint, c *resourcev1.ResourceClaim, claims int, devs *Devices) (map[string]string, error) {
	attr, kind := k.MatchAttribute, "matchAttribute"
	if k.DistinctAttribute != nil {
		attr, kind = k.DistinctAttribute, "distinctAttribute"
	}
	switch {
	case attr == nil:
		return nil, nil
	case claims > 1:
		return nil, fmt.Errorf("%s is supported in a pod's only resource claim; put the pod's GPU requests in one claim", kind)
	case len(k.Requests) > 0 && slices.ContainsFunc(c.Spec.Devices.Requests, func(r resourcev1.DeviceRequest) bool { return !slices.Contains(k.Requests, r.Name) }):
		return nil, fmt.Errorf("%s over requests %v is not supported; leave requests empty so that it spans all the claim's requests", kind, k.Requests)
	}
	name := string(*attr)
	domain, id, _ := strings.Cut(name, "/")
	out := map[string]string{}
	for uuid, d := range devs.ByUUID {
		a, ok := d.cel.Attributes[resourcev1.QualifiedName(name)]
		if !ok && domain == d.cel.Driver {
			a, ok = d.cel.Attributes[resourcev1.QualifiedName(id)]
		}
		if ok {
			out[uuid] = attributeValue(a)
		}
	}
	return out, nil
}

// matchBoth joins two matchAttribute constraints: the GPUs that have both attributes,
// with one value for each pair of values.
func matchBoth(a, b map[string]string) map[string]string {
	if a == nil {
		return b
	}
	out := map[string]string{}
	for uuid, v := range a {
		if w, ok := b[uuid]; ok {
			out[uuid] = v + "\x00" + w
		}
	}
	return out
}

// attributeValue is a device attribute's value as a string that tells its type too.
func attributeValue(a resourcev1.DeviceAttribute) string {
	switch {
	case a.IntValue != nil:
		return fmt.Sprintf("int:%d", *a.IntValue)
	case a.BoolValue != nil:
		return fmt.Sprintf("bool:%t", *a.BoolValue)
	case a.StringValue != nil:
		return "string:" + *a.StringValue
	case a.VersionValue != nil:
		return "version:" + *a.VersionValue
	}
	return ""
}

func keySet[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func ptrOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ShareRequestMiB is the GPU memory a request names, in MiB rounded up, if it names
// any: a share of one GPU.
func ShareRequestMiB(e *resourcev1.ExactDeviceRequest) (int64, bool) {
	if e.Capacity == nil {
		return 0, false
	}
	q, ok := e.Capacity.Requests[tesserav1.DeviceCapacityMemory]
	return mib(q.Value()), ok
}

// shareMiB is a share of req MiB as the accepted devices round it: the largest of their
// roundings, so that it fits wherever it is placed.
func shareMiB(req int64, acc map[string]bool, devs *Devices) int64 {
	out := req
	for uuid := range acc {
		if d := devs.ByUUID[uuid]; d != nil {
			out = max(out, d.ShareMiB(req))
		}
	}
	return out
}

func intersect(a, b map[string]bool) map[string]bool {
	if a == nil {
		return b
	}
	out := map[string]bool{}
	for k := range a {
		if b[k] {
			out[k] = true
		}
	}
	return out
}

// accepts returns the UUIDs of the published GPUs that a request's device class and
// selectors accept, evaluating their CEL expressions once per class and selectors.
func (s *build) accepts(e *resourcev1.ExactDeviceRequest, devs *Devices) (map[string]bool, error) {
	class := s.Builder.dra.classes[e.DeviceClassName]
	if class == nil {
		return nil, fmt.Errorf("device class %q does not exist; name %s or %s", e.DeviceClassName, tesserav1.DeviceClassGPU, tesserav1.DeviceClassGPUShare)
	}
	var exprs []string
	for _, sel := range append(slices.Clone(class.Spec.Selectors), e.Selectors...) {
		if sel.CEL != nil {
			exprs = append(exprs, sel.CEL.Expression)
		}
	}
	key := e.DeviceClassName + "\x00" + strings.Join(exprs, "\x00")
	if acc, ok := s.Builder.dra.accepts[key]; ok {
		return acc, nil
	}
	compiler := cel.GetCompiler(cel.Features{EnableConsumableCapacity: true})
	progs := make([]cel.CompilationResult, 0, len(exprs))
	for _, x := range exprs {
		r := compiler.CompileCELExpression(x, cel.Options{})
		if r.Error != nil {
			return nil, fmt.Errorf("selector %q: %v", x, r.Error)
		}
		progs = append(progs, r)
	}
	acc := map[string]bool{}
	for uuid, d := range devs.ByUUID {
		ok := true
		for _, prog := range progs {
			match, _, err := prog.DeviceMatches(context.Background(), d.cel)
			if err != nil {
				return nil, fmt.Errorf("selector %q on device %s/%s: %v", prog.Expression, d.Node, d.Name, err)
			}
			if !match {
				ok = false
				break
			}
		}
		if ok {
			acc[uuid] = true
		}
	}
	s.Builder.dra.accepts[key] = acc
	return acc, nil
}

// markDevices names each of n's GPUs after its published device, if any; where n
// publishes some and viaClaims, claims carry all of n's GPUs.
func markDevices(n *framework.Node, devs *Devices, viaClaims bool) {
	published := false
	for i := range n.GPUs {
		g := &n.GPUs[i]
		if d := devs.Of(n.Name, g.UUID); d != nil {
			g.Device, g.Shareable, published = d.Name, d.Shareable, true
		}
	}
	for i := range n.GPUs {
		n.GPUs[i].ViaClaims = viaClaims && published
	}
	n.Refresh()
}

// Extended-resource claim modes (Options.ExtendedResourceClaims): whether a pod asking
// GPUs as extended resources (tessera.dev/gpu, tessera.dev/gpu-memory, nvidia.com/gpu)
// gets them through a ResourceClaim the scheduler makes for it, as kube-scheduler does
// for extended resources backed by DRA (KEP-5004), rather than through the node agent's
// device plugin. Either way only on nodes whose GPUs are published as DRA devices.
const (
	// ExtendedClaimsAuto: on nodes whose kubelet is at least
	// tesserav1.ExtendedResourceClaimsKubelet, where DRAExtendedResource is always on
	// (the node agent's own auto stops its device plugins there).
	ExtendedClaimsAuto = "auto"
	// ExtendedClaimsOn: on every node; its kubelet must have the feature gate
	// DRAExtendedResource on (Kubernetes 1.36 and later by default).
	ExtendedClaimsOn = "on"
	// ExtendedClaimsOff: never; the device plugin delivers such pods' GPUs.
	ExtendedClaimsOff = "off"
)

// ExtendedClaimsModes lists the modes, the command line's default first.
var ExtendedClaimsModes = []string{ExtendedClaimsAuto, ExtendedClaimsOn, ExtendedClaimsOff}

// minClaimsKubelet is tesserav1.ExtendedResourceClaimsKubelet.
var minClaimsKubelet = version.MustParseGeneric(tesserav1.ExtendedResourceClaimsKubelet)

// claimsCarryGPUs reports whether the mode has claims carry the GPUs of node, should
// it publish them as devices.
func (o *Options) claimsCarryGPUs(node *corev1.Node) bool {
	switch o.ExtendedResourceClaims {
	case ExtendedClaimsOff:
		return false
	case ExtendedClaimsOn:
		return true
	}
	v, err := version.ParseGeneric(node.Status.NodeInfo.KubeletVersion)
	return err == nil && v.AtLeast(minClaimsKubelet)
}

// chargeForeignClaims counts on their GPUs the devices of claims allocated for anything
// but this scheduler's bound pods (which the GPU assignment places): claims that
// kube-scheduler or another scheduler allocated, and claims allocated and not yet
// consumed.
func (s *build) chargeForeignClaims() {
	for _, c := range s.Builder.dra.claims { // (in any order: the charges add up)
		if c.Status.Allocation == nil {
			continue
		}
		consumer := s.placedConsumer(c)
		placed := consumer != nil
		var assigned map[string]bool
		if placed {
			assigned = consumerAssignment(consumer)
			// Without an assignment the pod's GPUs are its claims' (claimedGPUs): only a
			// claim it names is counted through it.
			placed = assigned != nil || usesClaim(consumer, c.Name)
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver != tesserav1.DRADriver {
				continue
			}
			n := s.nodes[r.Pool]
			if n == nil {
				continue
			}
			i := slices.IndexFunc(n.GPUs, func(g framework.GPU) bool { return g.Device == r.Device })
			if i < 0 {
				continue
			}
			g := &n.GPUs[i]
			if placed && (assigned == nil || assigned[g.UUID]) {
				continue // counted through the pod: its assignment, or its claims (claimedGPUs)
			}
			milli := int64(framework.MilliPerGPU)
			if q, ok := r.ConsumedCapacity[tesserav1.DeviceCapacityMemory]; ok && g.MemoryMiB > 0 {
				milli = (mib(q.Value())*framework.MilliPerGPU + g.MemoryMiB - 1) / g.MemoryMiB
			}
			g.UsedMilli = min(g.UsedMilli+milli, framework.MilliPerGPU)
			n.Refresh()
			n.Version++
		}
	}
}

// claimedGPUs are the GPUs of node n that the claims reserved for pod p hold: its own
// claims and the one made for its extended resources (status.extendedResourceClaimStatus).
// A bound pod without a GPU assignment is placed where they say, which is where the
// kubelet runs it (placedConsumer leaves them uncharged).
func (s *build) claimedGPUs(p *corev1.Pod, n *framework.Node) framework.GPUSet {
	names := ClaimNames(p)
	if st := p.Status.ExtendedResourceClaimStatus; st != nil {
		names = append(names, st.ResourceClaimName)
	}
	var set framework.GPUSet
	for _, name := range names {
		c := s.Builder.dra.claims[p.Namespace+"/"+name]
		if c == nil || c.Status.Allocation == nil ||
			!slices.ContainsFunc(c.Status.ReservedFor, func(r resourcev1.ResourceClaimConsumerReference) bool { return r.UID == p.UID }) {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			i := slices.IndexFunc(n.GPUs, func(g framework.GPU) bool { return g.Device == r.Device })
			if r.Driver == tesserav1.DRADriver && r.Pool == n.Name && i >= 0 {
				set = set.Add(i)
			}
		}
	}
	return set
}

// consumerAssignment is the set of GPU UUIDs the GPU assignment of pod p names; nil
// when it has none. A device of a claim that the assignment does not name (an
// allocation left from an earlier placement of the pod) still holds its GPU.
func consumerAssignment(p *corev1.Pod) map[string]bool {
	v, has := p.Annotations[tesserav1.AnnotationGPUAssign]
	if !has {
		return nil
	}
	a, err := tesserav1.ParseGPUAssignment(v)
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, ctr := range a.Containers {
		for _, u := range ctr.UUIDs {
			out[u] = true
		}
	}
	return out
}

// usesClaim reports whether pod p names claim name: among its claims, or as the claim
// made for its extended resources. A claim reserved for p that it does not name (one
// the controller made twice for one pod claim, say) is not counted through p.
func usesClaim(p *corev1.Pod, name string) bool {
	if st := p.Status.ExtendedResourceClaimStatus; st != nil && st.ResourceClaimName == name {
		return true
	}
	return slices.Contains(ClaimNames(p), name)
}

// placedConsumer is the pod of this scheduler, bound and not ended, that a claim is
// reserved for; nil if none. A claim whose pods all ended holds its devices until the
// binder releases it (a release that failed, on a conflict, is retried next session):
// the ended pod no longer holds the GPU, so the claim does, and no other pod gets it
// meanwhile.
func (s *build) placedConsumer(c *resourcev1.ResourceClaim) *corev1.Pod {
	for _, ref := range c.Status.ReservedFor {
		if ref.Resource != "pods" {
			continue
		}
		in, ok := s.Builder.pods[c.Namespace+"/"+ref.Name]
		if ok && in.pod.UID == ref.UID && in.pod.Spec.SchedulerName == s.opts.SchedulerName && in.pod.Spec.NodeName != "" &&
			in.pod.Status.Phase != corev1.PodSucceeded && in.pod.Status.Phase != corev1.PodFailed {
			return in.pod
		}
	}
	return nil
}
