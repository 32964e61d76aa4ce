package capi_test

import (
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/autoscale/actuator"

	"github.com/tessera-gpu/tessera/internal/controller"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/autoscale/capi"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/internal/kubeclient/kubeclienttest"
	"github.com/tessera-gpu/tessera/rightsize/recommender"
	"github.com/tessera-gpu/tessera/test/testenv"
)

const leaseNamespace = "tessera-system"

// requests records the API requests of a rest.Config as "group resource verb".
type requests struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (r *requests) wrap(rt http.RoundTripper) http.RoundTripper {
	f := &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if info, err := f.NewRequestInfo(req); err == nil && info.IsResourceRequest {
			res := info.Resource
			if info.Subresource != "" {
				res += "/" + info.Subresource
			}
			r.mu.Lock()
			r.seen[info.APIGroup+" "+res+" "+info.Verb] = true
			r.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// granted lists the rules' "group resource verb" triples.
func granted(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, g+" "+res+" "+v)
				}
			}
		}
	}
	return out
}

// TestDeployRBACGrantsExactlyWhatItUses runs `tessera autoscaler`'s manager (leader
// election, health and metrics endpoints) as the ServiceAccount of the kustomize base
// (rendered from the chart) through two scale-downs, one of a MachineDeployment and one
// of a lone MachineSet, and the idle reclaim of a workload of every kind it suspends
// (idleWorkloads), and the GPU-profile recommender's recording of one ended run
// (endedGPURun), and records every request: each must be granted, and each
// granted verb must have been used, so removing any verb from the chart's
// autoscaler/rbac.yaml fails this test. Two exceptions: patching events (the event
// recorders patch only an event that repeats) and listing what is watched (informers
// list only where the API server does not stream the watch's initial state).
func TestDeployRBACGrantsExactlyWhatItUses(t *testing.T) {
	h := newHarness(t)
	if err := h.c.Create(h.ctx, apitest.MakeNamespace(leaseNamespace).Obj()); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "deploy", "kustomize", "base", "autoscaler", "rbac.yaml")
	objs, err := env.DecodeFiles(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Apply(h.ctx, file); err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, o := range objs {
		switch r := o.(type) {
		case *rbacv1.ClusterRole:
			rules = append(rules, granted(r.Rules)...)
		case *rbacv1.Role:
			rules = append(rules, granted(r.Rules)...)
		}
	}
	for _, n := range []string{"a", "b", "c"} {
		h.gpuNode(n, 2*time.Hour, nil)
	}
	h.machineDeployment(-1, "a", "c")
	h.machineSet("solo", nil, "b")
	h.pod("web", "a", 0)
	h.pod("train-c", "c", 8)
	h.policy(tesserav1.ScaleDownPolicySpec{MaxParallel: 2, Cooldown: &metav1.Duration{}})
	idle := newIdleWorkloads(h)
	profile := h.endedGPURun("c")

	rec := &requests{seen: map[string]bool{}}
	sa := rest.CopyConfig(env.Config)
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + leaseNamespace + ":tessera-autoscaler"}
	sa.WrapTransport = rec.wrap
	mgmt, err := client.New(sa, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr, probeAddr := kubeclienttest.FreeAddr(t), kubeclienttest.FreeAddr(t)
	mgr, _, err := actuator.NewManager(sa, env.Scheme, actuator.Config{
		Actuator:       actuator.Options{Scheduler: mustPolicy(t), RevalidateAfter: time.Second},
		Infrastructure: capi.New(mgmt), Period: 200 * time.Millisecond, Registerer: crmetrics.Registry,
		Serving: controller.Serving{LeaderElect: true, LeaderElectionNamespace: leaseNamespace, LeaderElectionID: "autoscaler-rbac-test",
			LeaseDuration: 2 * time.Second, MetricsAddr: metricsAddr, ProbeAddr: probeAddr, Log: testr.New(t)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recommender.Setup(mgr, recommender.Options{Registerer: prometheus.NewRegistry(), Log: testr.New(t)}); err != nil {
		t.Fatal(err)
	}
	stop := testenv.RunManager(t, h.ctx, mgr)
	get := func(addr, path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	want := `tessera_autoscale_scaled_down_nodes_total{gpu_model="A100-80GB",reason="Empty"} 2`
	deadline := time.Now().Add(90 * time.Second)
	for {
		h.kubelet()
		idle.sample()
		pa, _, _ := h.phase("a")
		pb, _, _ := h.phase("b")
		code, body := get(metricsAddr, "/metrics")
		left := idle.left()
		runs := profile()
		if pa == autoscale.PhaseRemoved && pb == autoscale.PhaseRemoved && code == http.StatusOK && strings.Contains(body, want) && len(left) == 0 && runs == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a %q, b %q; /metrics %d lacks %q; not reclaimed: %v; GPUProfile runs %d, want 1", pa, pb, code, want, left, runs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(probeAddr, path); code != http.StatusOK {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	if got := h.replicas("md"); got != 1 {
		t.Errorf("MachineDeployment at %d replicas, want 1", got)
	}
	var solo clusterv1.MachineSet
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "solo"}, &solo); err != nil || *solo.Spec.Replicas != 0 {
		t.Errorf("MachineSet solo: %v %+v", err, solo.Spec.Replicas)
	}
	stop()

	rec.mu.Lock()
	defer rec.mu.Unlock()
	var used []string
	for k := range rec.seen {
		used = append(used, k)
	}
	sort.Strings(used)
	for _, u := range used {
		if !slices.Contains(rules, u) {
			t.Errorf("request %q is not granted by %s", u, file)
		}
	}
	for _, g := range rules {
		// An informer lists where the API server does not stream its watch (WatchList):
		// list goes with watch.
		if list, ok := strings.CutSuffix(g, " list"); ok && rec.seen[list+" watch"] {
			continue
		}
		if !rec.seen[g] && !strings.HasSuffix(g, "events patch") {
			t.Errorf("%s grants %q, which the autoscaler never used", file, g)
		}
	}
	t.Logf("requests: %s", strings.Join(used, "; "))
}

// endedGPURun publishes, in node n's GPUNode, a pod of this namespace that ended with a
// peak of GPU memory; the returned function reads the runs its workload's GPUProfile
// recorded.
func (h *harness) endedGPURun(n string) func() int32 {
	h.t.Helper()
	pod := h.pod("gpu-run", n, 0)
	var gn tesserav1.GPUNode
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: h.name(n)}, &gn); err != nil {
		h.t.Fatal(err)
	}
	ended := metav1.NewTime(h.clock.Now())
	gn.Status.Pods = []tesserav1.GPUPodMemory{{Namespace: h.ns, Name: pod.Name, UID: string(pod.UID), Workload: "Pod/gpu-run",
		PeakMiB: 20000, FirstMiB: 1000, GPUMemoryMiB: 81920, EndedTime: &ended}}
	if err := h.c.Status().Update(h.ctx, &gn); err != nil {
		h.t.Fatal(err)
	}
	return func() int32 {
		var list tesserav1.GPUProfileList
		if err := h.c.List(h.ctx, &list, client.InNamespace(h.ns)); err != nil || len(list.Items) == 0 {
			return 0
		}
		return list.Items[0].Status.Runs
	}
}
