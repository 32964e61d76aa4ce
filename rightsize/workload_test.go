package rightsize

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

func owner(kind, name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{Kind: kind, Name: name, Controller: ptr.To(true)}}
}

func TestWorkloadKey(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		owners []metav1.OwnerReference
		want   string
	}{
		{"label wins", map[string]string{"tessera.dev/workload": "llama-ft", "jobset.sigs.k8s.io/jobset-name": "js"}, owner("Job", "x"), "llama-ft"},
		{"bare pod", nil, nil, "Pod/p"},
		{"owner not controlling", nil, []metav1.OwnerReference{{Kind: "Job", Name: "j"}}, "Pod/p"},
		{"job", nil, owner("Job", "train-llama"), "Job/train-llama"},
		{"job with a short number", nil, owner("Job", "train-2"), "Job/train-2"},
		{"cronjob's job", nil, owner("Job", "nightly-eval-29412345"), "CronJob/nightly-eval"},
		{"job with a non-digit suffix", nil, owner("Job", "nightly-eval-2941234a"), "Job/nightly-eval-2941234a"},
		{"deployment's replicaset", map[string]string{"pod-template-hash": "7d9f8b6c5"}, owner("ReplicaSet", "serve-7d9f8b6c5"), "Deployment/serve"},
		{"replicaset without the hash label", nil, owner("ReplicaSet", "serve-7d9f8b6c5"), "ReplicaSet/serve-7d9f8b6c5"},
		{"replicaset with another hash", map[string]string{"pod-template-hash": "abc"}, owner("ReplicaSet", "serve-7d9f8b6c5"), "ReplicaSet/serve-7d9f8b6c5"},
		{"statefulset", nil, owner("StatefulSet", "db"), "StatefulSet/db"},
		{"jobset", map[string]string{"jobset.sigs.k8s.io/jobset-name": "pretrain", "jobset.sigs.k8s.io/replicatedjob-name": "workers"}, owner("Job", "pretrain-workers-0"), "JobSet/pretrain/workers"},
		{"jobset without replicated job", map[string]string{"jobset.sigs.k8s.io/jobset-name": "pretrain"}, owner("Job", "pretrain-workers-0"), "JobSet/pretrain"},
		{"leaderworkerset", map[string]string{"leaderworkerset.sigs.k8s.io/name": "vllm"}, owner("StatefulSet", "vllm-0"), "LeaderWorkerSet/vllm"},
		{"raycluster", map[string]string{"ray.io/cluster": "rc", "ray.io/group": "gpu-workers"}, owner("RayCluster", "rc"), "RayCluster/rc/gpu-workers"},
		{"rayjob's cluster", map[string]string{"ray.io/cluster": "tune-raycluster-x7k2p", "ray.io/group": "gpu", "ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "tune"}, owner("RayCluster", "tune-raycluster-x7k2p"), "RayJob/tune/gpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WorkloadKey(tc.labels, tc.owners, "p"); got != tc.want {
				t.Errorf("WorkloadKey = %q, want %q", got, tc.want)
			}
		})
	}
}

func ExampleWorkloadKey() {
	// A pod of the Job the CronJob "nightly-eval" started at its scheduled minute.
	owners := []metav1.OwnerReference{{Kind: "Job", Name: "nightly-eval-29412345", Controller: ptr.To(true)}}
	fmt.Println(WorkloadKey(nil, owners, "nightly-eval-29412345-xk2pq"))
	// Output: CronJob/nightly-eval
}

func TestProfileNames(t *testing.T) {
	for _, tc := range []struct{ key, name string }{
		{"Job/train-llama", "job.train-llama"},
		{"JobSet/pretrain/workers", "jobset.pretrain.workers"},
		{"My_Model v2", "my-model-v2"},
		{"/odd/", "odd"},
		{"__", "workload"},
	} {
		name, fallback := ProfileNames(tc.key)
		if name != tc.name {
			t.Errorf("ProfileNames(%q) name = %q, want %q", tc.key, name, tc.name)
		}
		if !strings.HasPrefix(fallback, tc.name+"-") || len(fallback) != len(tc.name)+9 {
			t.Errorf("ProfileNames(%q) fallback = %q, want %q and a hash", tc.key, fallback, tc.name)
		}
	}
	// Keys that sanitise alike share a name, never a fallback.
	if a, b := fallbackOf("Job/Train"), fallbackOf("Job/train"); a == b {
		t.Errorf("fallbacks of different keys collide: %q", a)
	}
	long := "Deployment/" + strings.Repeat("x", 300)
	name, fallback := ProfileNames(long)
	if len(name) != maxProfileName || name != fallback || !strings.HasPrefix(name, "deployment.xxx") {
		t.Errorf("long key: %q, %q", name, fallback)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		t.Errorf("%q: %v", name, errs)
	}
}

func fallbackOf(key string) string { _, f := ProfileNames(key); return f }
