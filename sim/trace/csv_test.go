package trace

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

const openbDir = "../traces/openb"

// manifestRows reads the row counts that MANIFEST.csv records for the shipped files.
func manifestRows(t *testing.T) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(openbDir, "MANIFEST.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{}
	for _, r := range recs[1:] {
		if n, err := strconv.Atoi(r[1]); err == nil {
			rows[r[0]] = n
		}
	}
	return rows
}

func TestReadOpenbNodes(t *testing.T) {
	nodes, err := ReadNodesCSV(filepath.Join(openbDir, "openb_node_list_gpu_node.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1213 {
		t.Fatalf("got %d nodes, want 1213", len(nodes))
	}
	gpus := 0
	mix := map[string]int{}
	for _, n := range nodes {
		gpus += n.GPUs
		mix[n.Model+"x"+strconv.Itoa(n.GPUs)]++
		if want, _ := GPUModelMemoryMiB(n.Model); n.GPUMemoryMiB != want || want == 0 {
			t.Fatalf("node %s: GPU memory %d, want %d", n.Name, n.GPUMemoryMiB, want)
		}
		if n.Labels["tessera.dev/gpu-model"] != n.Model {
			t.Fatalf("node %s: labels %v", n.Name, n.Labels)
		}
	}
	if gpus != 6212 {
		t.Errorf("got %d GPUs, want 6212", gpus)
	}
	// The node mix FGD-PROTOCOL.md lists.
	want := map[string]int{"G2x8": 549, "T4x2": 387, "P100x2": 131, "G3x8": 39, "V100M16x4": 28, "V100M32x8": 21,
		"V100M16x1": 19, "T4x4": 17, "V100M32x4": 9, "V100M16x8": 8, "P100x1": 3, "A10x1": 2}
	for k, v := range want {
		if mix[k] != v {
			t.Errorf("%s: %d nodes, want %d", k, mix[k], v)
		}
	}
	if first := nodes[0]; !reflect.DeepEqual(first, NodeSpec{Name: "openb-node-0000", MilliCPU: 64000, MemoryMiB: 262144, GPUs: 2, Model: "P100",
		GPUMemoryMiB: 16280, Labels: map[string]string{"tessera.dev/gpu-model": "P100"}}) {
		t.Errorf("first node %+v", first)
	}
}

func TestReadOpenbPodLists(t *testing.T) {
	rows := manifestRows(t)
	files, err := filepath.Glob(filepath.Join(openbDir, "openb_pod_list_*.csv"))
	if err != nil || len(files) != 12 {
		t.Fatalf("pod lists: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			pods, err := ReadPodsCSV(f)
			if err != nil {
				t.Fatal(err)
			}
			if want := rows[filepath.Base(f)]; len(pods) != want {
				t.Fatalf("%d pods, MANIFEST.csv says %d", len(pods), want)
			}
			short := strings.Contains(f, "multigpu20")
			for _, p := range pods {
				if short && (p.Creation != -1 || p.Deletion != -1 || p.Scheduled != -1 || p.QoS != "") {
					t.Fatalf("%s has no time or qos columns, got %+v", f, p)
				}
				if !short && p.Creation < 0 {
					t.Fatalf("pod %s on line %d: creation %d", p.Name, p.Line, p.Creation)
				}
			}
		})
	}
	pods, err := ReadPodsCSV(filepath.Join(openbDir, "openb_pod_list_default.csv"))
	if err != nil {
		t.Fatal(err)
	}
	p0 := pods[0]
	if p0.Name != "openb-pod-0000" || p0.MilliCPU != 12000 || p0.MemoryMiB != 16384 || p0.NumGPU != 1 || p0.GPUMilli != 1000 ||
		p0.GPUModels != nil || p0.QoS != "LS" || p0.Phase != "Running" || p0.Creation != 0 || p0.Deletion != 12537496 || p0.Scheduled != 0 || p0.Line != 2 {
		t.Errorf("first pod %+v", p0)
	}
	// openb-pod-0061 is Pending with no scheduled_time.
	for _, p := range pods {
		if p.Name == "openb-pod-0061" && p.Scheduled != -1 {
			t.Errorf("pending pod: scheduled %d, want -1", p.Scheduled)
		}
	}
}

func TestReadPodsOptionalColumnsAndSpec(t *testing.T) {
	in := "gpu_milli,num_gpu,name,memory_mib,cpu_milli,gpu_spec\n" +
		"500,1,a,1024,2000,V100M16|V100M32\n" +
		"1000,4,b,0,0,nan\n" +
		"0,0,c,10,10,\n"
	pods, err := ReadPods(strings.NewReader(in), "x.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 3 {
		t.Fatalf("%d pods", len(pods))
	}
	a := pods[0]
	if a.GPUMilli != 500 || a.NumGPU != 1 || a.MilliCPU != 2000 || a.MemoryMiB != 1024 || !a.IsShare() ||
		len(a.GPUModels) != 2 || !a.AllowsModel("V100M32") || a.AllowsModel("T4") || a.Creation != -1 || a.Line != 2 {
		t.Errorf("pod a %+v", a)
	}
	if mib, ok := a.GPUMemoryMiBOn("V100M16"); !ok || mib != 8080 {
		t.Errorf("half a V100M16: %d MiB", mib)
	}
	if b := pods[1]; b.GPUModels != nil || b.GPURequestMilli() != 4000 || b.IsShare() || !b.AllowsModel("T4") {
		t.Errorf("pod b %+v", b)
	}
}

func TestReadErrors(t *testing.T) {
	const podHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	const nodeHeader = "sn,cpu_milli,memory_mib,gpu,model\n"
	cases := []struct {
		name, in string
		nodes    bool
		want     string
	}{
		{"pod bad number", podHeader + "p,12x,1,1,1000,,LS,Running,0,1,0\n", false, "f.csv:2: column cpu_milli: bad number \"12x\""},
		{"pod negative cpu", podHeader + "p,-1,1,1,1000,,LS,Running,0,1,0\n", false, "f.csv:2: column cpu_milli: negative value -1"},
		{"pod negative memory", podHeader + "p,1,-5,1,1000,,LS,Running,0,1,0\n", false, "f.csv:2: column memory_mib: negative value -5"},
		{"pod negative gpu", podHeader + "p,1,1,-1,1000,,LS,Running,0,1,0\n", false, "f.csv:2: column num_gpu: negative value -1"},
		{"pod empty number", podHeader + "p,1,,1,1000,,LS,Running,0,1,0\n", false, "f.csv:2: column memory_mib: empty"},
		{"gpu_milli over 1000", podHeader + "p,1,1,1,1200,,LS,Running,0,1,0\n", false, "f.csv:2: column gpu_milli: 1200 out of range 0..1000"},
		{"gpu_milli negative", podHeader + "p,1,1,1,-3,,LS,Running,0,1,0\n", false, "f.csv:2: column gpu_milli: negative value -3"},
		{"multi-GPU share", podHeader + "p,1,1,2,500,,LS,Running,0,1,0\n", false, "f.csv:2: column gpu_milli: 500 with num_gpu 2"},
		{"GPU pod without milli", podHeader + "p,1,1,1,0,,LS,Running,0,1,0\n", false, "f.csv:2: column gpu_milli: 0 on a pod with num_gpu 1"},
		{"CPU pod with milli", podHeader + "p,1,1,0,300,,LS,Running,0,1,0\n", false, "f.csv:2: column gpu_milli: 300 on a CPU-only pod"},
		{"unknown model in gpu_spec", podHeader + "ok,1,1,1,1000,,LS,Running,0,1,0\np,1,1,1,1000,V100M16|K80,LS,Running,0,1,0\n", false, "f.csv:3: column gpu_spec: unknown GPU model \"K80\""},
		{"bad time", podHeader + "p,1,1,1,1000,,LS,Running,soon,1,0\n", false, "f.csv:2: column creation_time: bad time \"soon\""},
		{"deleted before created", podHeader + "p,1,1,1,1000,,LS,Running,10,5,10\n", false, "f.csv:2: column deletion_time: 5 is before creation_time 10"},
		{"scheduled before created", podHeader + "p,1,1,1,1000,,LS,Running,10,50,5\n", false, "f.csv:2: column scheduled_time: 5 is before creation_time 10"},
		{"duplicate pod", podHeader + "p,1,1,1,1000,,LS,Running,0,1,0\np,1,1,1,1000,,LS,Running,0,1,0\n", false, "f.csv:3: column name: duplicate pod \"p\" (first on line 2)"},
		{"empty pod name", podHeader + ",1,1,1,1000,,LS,Running,0,1,0\n", false, "f.csv:2: column name: empty pod name"},
		{"short row", podHeader + "p,1,1,1\n", false, "f.csv:2: wrong number of fields"},
		{"missing column", "name,cpu_milli,memory_mib,num_gpu\np,1,1,1\n", false, "f.csv:1: column gpu_milli: missing from the header"},
		{"unknown column", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spce\np,1,1,1,1000,\n", false, "f.csv:1: column gpu_spce: unknown"},
		{"duplicate column", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,cpu_milli\np,1,1,1,1000,1\n", false, "f.csv:1: column cpu_milli: appears twice"},
		{"empty pod file", "", false, "f.csv:1: empty file"},
		{"node unknown model", nodeHeader + "n0,1000,1024,8,K80\n", true, "f.csv:2: column model: unknown GPU model \"K80\""},
		{"node GPUs without model", nodeHeader + "n0,1000,1024,8,\n", true, "f.csv:2: column model: empty GPU model on a node with 8 GPUs"},
		{"node negative GPUs", nodeHeader + "n0,1000,1024,-8,T4\n", true, "f.csv:2: column gpu: negative value -8"},
		{"node bad memory", nodeHeader + "n0,1000,1e3,8,T4\n", true, "f.csv:2: column memory_mib: bad number \"1e3\""},
		{"node duplicate", nodeHeader + "n0,1000,1024,8,T4\nn0,1000,1024,8,T4\n", true, "f.csv:3: column sn: duplicate node \"n0\" (first on line 2)"},
		{"node with a billion GPUs", nodeHeader + "n0,1000,1024,1000000000,T4\n", true, "f.csv:2: column gpu: 1000000000 GPUs; at most 64 per node are supported"},
		{"node with 65 GPUs", nodeHeader + "n0,1000,1024,65,T4\n", true, "f.csv:2: column gpu: 65 GPUs; at most 64 per node"},
		{"node huge memory", nodeHeader + "n0,1000,99999999999999,8,T4\n", true, "f.csv:2: column memory_mib: 99999999999999 is above the limit 4294967296"},
		{"pod with 65 GPUs", podHeader + "p,1,1,65,1000,,LS,Running,0,1,0\n", false, "f.csv:2: column num_gpu: 65 GPUs; a pod runs on one node, and a node has at most 64"},
		{"pod time beyond 100 years", podHeader + "p,1,1,1,1000,,LS,Running,0,9999999999999,0\n", false, "f.csv:2: column deletion_time: 9999999999999 is above the limit"},
		{"node quoted newline keeps line numbers", nodeHeader + "\"n\n0\",1000,1024,8,T4\nn1,x,1024,8,T4\n", true, "f.csv:4: column cpu_milli: bad number \"x\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.nodes {
				_, err = ReadNodes(strings.NewReader(c.in), "f.csv")
			} else {
				_, err = ReadPods(strings.NewReader(c.in), "f.csv")
			}
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("error %v, want prefix %q", err, c.want)
			}
		})
	}
}

func TestCPUOnlyNodes(t *testing.T) {
	nodes, err := ReadNodes(strings.NewReader("sn,cpu_milli,memory_mib,gpu,model\nc0,32000,262144,0,\nc1,32000,262144,0,nan\n"), "n.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.GPUs != 0 || n.Model != "" || n.GPUMemoryMiB != 0 || n.GPUMilli() != 0 {
			t.Errorf("CPU node %+v", n)
		}
	}
}

func TestModelTable(t *testing.T) {
	want := map[string]int64{"T4": 15109, "V100M16": 16160, "P100": 16280, "A10": 22731, "V100M32": 32510, "A100": 81251,
		"G1": 10000, "G2": 20000, "G3": 30000, "A100-80GB": 81920, "A100-40GB": 40960, "H100-80GB": 81559, "H200": 143771, "L40S": 46068}
	if got := GPUModelNames(); len(got) != len(want) {
		t.Errorf("models %v", got)
	}
	for m, mib := range want {
		if got, ok := GPUModelMemoryMiB(m); !ok || got != mib {
			t.Errorf("%s: %d MiB, want %d", m, got, mib)
		}
	}
	if _, ok := GPUModelMemoryMiB("a100"); ok {
		t.Error("model names are case-sensitive")
	}
	if mib, _ := MilliToMiB(1000, "T4"); mib != 15109 {
		t.Errorf("a whole T4 is %d MiB", mib)
	}
	if mib, _ := MilliToMiB(1, "G2"); mib != 20 {
		t.Errorf("1/1000 of G2 is %d MiB", mib)
	}
	if mib, _ := MilliToMiB(333, "T4"); mib != 5032 { // 5031.297 rounded up
		t.Errorf("0.333 of a T4 is %d MiB", mib)
	}
}
