package webhooks

import (
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

func TestBuildPatch(t *testing.T) {
	classes := map[string]int32{"batch-normal": 50}
	for _, tc := range []struct {
		name, kind, raw string
		mutations       map[string]any
		want            string // the patch, or the object it leaves when wantObj
		wantObj         bool
		ignored         int
	}{
		{name: "a different value is replaced, an equal one left, a missing one added", kind: KindPod,
			raw:       `{"metadata":{"labels":{"tessera.dev/queue":"train"}},"spec":{"schedulerName":"default-scheduler","priority":0}}`,
			mutations: map[string]any{MutateQueue: "train", MutateSchedulerName: "tessera", MutatePriorityClassName: "batch-normal"},
			want: `[{"op":"replace","path":"/spec/priority","value":50},{"op":"add","path":"/spec/priorityClassName","value":"batch-normal"},` +
				`{"op":"replace","path":"/spec/schedulerName","value":"tessera"}]`},
		{name: "numbers the mutations leave alone stay as they were", kind: KindJob,
			raw:       `{"spec":{"activeDeadlineSeconds":9007199254740993,"backoffLimit":1e2,"template":{"spec":{"schedulerName":"tessera"}}}}`,
			mutations: map[string]any{MutateSchedulerName: "tessera"}, want: `[]`},
		{name: "missing parents are created in one operation", kind: KindJob, raw: `{"spec":{"template":{}}}`,
			mutations: map[string]any{MutateQueue: "q"}, wantObj: true,
			want: `{"metadata":{"labels":{"tessera.dev/queue":"q"}},"spec":{"template":{"metadata":{"labels":{"tessera.dev/queue":"q"}}}}}`},
		{name: "a pod template that is not there is not made", kind: KindLeaderWorkerSet,
			raw:       `{"spec":{"leaderWorkerTemplate":{"size":4,"workerTemplate":{"spec":{}}}}}`,
			mutations: map[string]any{MutateQueue: "q", MutateSchedulerName: "tessera"}, wantObj: true,
			want: `{"metadata":{"labels":{"tessera.dev/queue":"q"}},"spec":{"leaderWorkerTemplate":{"size":4,"workerTemplate":` +
				`{"metadata":{"labels":{"tessera.dev/queue":"q"}},"spec":{"schedulerName":"tessera"}}}}}`},
		{name: "every pod template of a custom workload, in lists and maps", kind: KindPyTorchJob,
			raw: `{"spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":{"spec":{"containers":[` +
				`{"name":"m","resources":{"limits":{"tessera.dev/gpu-memory":"4096"}}}]}}},"Worker":{"template":{"spec":{}}}}}}`,
			mutations: map[string]any{MutatePriorityClassName: "batch-normal", MutateMinAvailable: json.Number("2")}, wantObj: true, ignored: 1,
			want: `{"spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":{"spec":{"priorityClassName":"batch-normal","containers":[` +
				`{"name":"m","resources":{"requests":{"tessera.dev/gpu-slice":"1"},"limits":{"tessera.dev/gpu-memory":"4096","tessera.dev/gpu-slice":"1"}}}]}}},` +
				`"Worker":{"template":{"spec":{"priorityClassName":"batch-normal"}}}}}}`},
		{name: "keys the kind has no place for are ignored", kind: KindPodGroup, raw: `{"spec":{"minMember":3}}`,
			mutations: map[string]any{MutateSchedulerName: "tessera", MutateMinAvailable: json.Number("3"), MutateGPURewrite: true},
			want:      `[]`, ignored: 2},
		{name: "a GPU-memory slice gets exactly one slice device, with or without mutations", kind: KindJob,
			raw: `{"spec":{"template":{"spec":{"initContainers":[{"name":"i"}],"containers":[` +
				`{"name":"a","resources":{"limits":{"tessera.dev/gpu-memory":"4096","tessera.dev/gpu-slice":"4"}}},` +
				`{"name":"b","resources":{"requests":{"cpu":"1"}}}]}}}}`,
			wantObj: true,
			want: `{"spec":{"template":{"spec":{"initContainers":[{"name":"i"}],"containers":[` +
				`{"name":"a","resources":{"requests":{"tessera.dev/gpu-slice":"1"},"limits":{"tessera.dev/gpu-memory":"4096","tessera.dev/gpu-slice":"1"}}},` +
				`{"name":"b","resources":{"requests":{"cpu":"1"}}}]}}}}`},
		{name: "a slice device asked already is left as it is", kind: KindPod,
			raw:  `{"spec":{"containers":[{"name":"a","resources":{"requests":{"tessera.dev/gpu-memory":"1","tessera.dev/gpu-slice":"1"},"limits":{"tessera.dev/gpu-slice":"1"}}}]}}`,
			want: `[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, ignored, err := BuildPatch(tc.kind, []byte(tc.raw), tc.mutations, classes)
			if err != nil {
				t.Fatal(err)
			}
			if len(ignored) != tc.ignored {
				t.Fatalf("ignored %v, want %d keys", ignored, tc.ignored)
			}
			got, err := json.Marshal(ops)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantObj {
				p, err := jsonpatch.DecodePatch(got)
				if err != nil {
					t.Fatal(err)
				}
				if got, err = p.Apply([]byte(tc.raw)); err != nil {
					t.Fatalf("patch does not apply: %v", err)
				}
				if !jsonpatch.Equal(got, []byte(tc.want)) {
					t.Fatalf("patched object %s, want %s", got, tc.want)
				}
				return
			}
			if string(got) != tc.want {
				t.Fatalf("patch %s\nwant  %s", got, tc.want)
			}
		})
	}
	for _, raw := range []string{`null`, `[]`, `"pod"`, `{`} {
		if _, _, err := BuildPatch(KindPod, []byte(raw), map[string]any{MutateQueue: "q"}, nil); err == nil {
			t.Errorf("BuildPatch of %s: no error", raw)
		}
	}
}
