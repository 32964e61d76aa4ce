package trace

import (
	"bytes"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/testutil"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// FuzzReadNodes: any input is rejected or gives nodes within the bounds every input
// path enforces.
func FuzzReadNodes(f *testing.F) {
	testutil.Seeds(f,
		"sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,8,A100\nn1,32000,131072,0,nan\n",
		"sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,1000000000,T4\n",
		"sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,65,T4\n",
		"\ufeffsn,cpu_milli,memory_mib,gpu,model\n\"n\n0\",1,1,2,P100\n",
		"",
	)
	f.Fuzz(func(t *testing.T, b []byte) {
		nodes, err := ReadNodes(bytes.NewReader(b), "f.csv")
		if err != nil {
			return
		}
		for _, n := range nodes {
			if n.GPUs < 0 || n.GPUs > framework.MaxGPUsPerNode || n.MilliCPU > maxQuantity || n.MemoryMiB > maxQuantity {
				t.Fatalf("node out of bounds: %+v", n)
			}
		}
	})
}

// FuzzReadPods: any input is rejected or gives pods a node could hold.
func FuzzReadPods(f *testing.F) {
	testutil.Seeds(f,
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\np,12000,16384,1,460,V100M16|V100M32,LS,Running,0,10,0\n",
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,64,1000\nq,1,1,0,0\n",
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,2,500\n",
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\np,1,1,1,1000,99999999999999\n",
	)
	f.Fuzz(func(t *testing.T, b []byte) {
		pods, err := ReadPods(bytes.NewReader(b), "f.csv")
		if err != nil {
			return
		}
		for _, p := range pods {
			if p.NumGPU < 0 || p.NumGPU > framework.MaxGPUsPerNode || p.GPUMilli < 0 || p.GPUMilli > 1000 ||
				(p.NumGPU > 1 && p.GPUMilli != 1000) || p.Creation > maxTime || p.Deletion > maxTime {
				t.Fatalf("pod out of bounds: %+v", p)
			}
		}
	})
}

// FuzzDecodeManifests: any input is rejected with an error or decoded; nothing panics,
// and every custom resource decoded passed its CRD (a PodGroup's minMember is >= 1).
func FuzzDecodeManifests(f *testing.F) {
	testutil.Seeds(f,
		"apiVersion: v1\nkind: Node\nmetadata:\n  name: n0\nstatus:\n  allocatable: {tessera.dev/gpu: \"8\"}\n",
		"apiVersion: tessera.dev/v1alpha1\nkind: PodGroup\nmetadata:\n  name: g\nspec:\n  minMember: 0\n",
		"apiVersion: tessera.dev/v1alpha1\nkind: AdmissionPolicy\nmetadata:\n  name: p\nspec:\n  targets: [Widget]\n  rego: package tessera.p\n",
		"apiVersion: tessera.dev/v1alpha1\nkind: Queue\nmetadata:\n  name: q\nspec:\n  parent: q\n",
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {containers: [{name: c, image: x}]}\n",
		"---\n# nothing\n",
	)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifests(bytes.NewReader(b), "f.yaml")
		if err != nil {
			return
		}
		for _, g := range m.PodGroups {
			if g.Spec.MinMember < 1 {
				t.Fatalf("PodGroup %s: minMember %d passed", g.Name, g.Spec.MinMember)
			}
		}
	})
}
