package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// FakeRuntime is the pod annotation after which kwok completes a running pod (a Go
// duration, say "40s"); pods without it run until deleted.
const FakeRuntime = "tessera.dev/fake-runtime"

// kwokUpstreamStages are kwok's own stages the cluster uses, from its module: nodes
// become and stay Ready, pods start, deleted pods go.
var kwokUpstreamStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat/node-heartbeat.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

// podComplete completes a running pod FakeRuntime after it was matched: kwok's own
// pod-complete stage only completes Job pods and reads its own annotation.
var podComplete = fmt.Sprintf(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: tessera-fake-runtime
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.status.phase', operator: In, values: [Running]}
    - {key: '.metadata.annotations["%[1]s"]', operator: Exists}
  delay:
    durationMilliseconds: 1000
    durationFrom: {expressionFrom: '.metadata.annotations["%[1]s"]'}
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
      {{ end }}
      conditions:
      - {type: Ready, status: "False", reason: PodCompleted, lastTransitionTime: {{ $now | Quote }}}
      - {type: ContainersReady, status: "False", reason: PodCompleted, lastTransitionTime: {{ $now | Quote }}}
      phase: Succeeded
`, FakeRuntime)

// writeKwokStages writes kwok's --config: its upstream stages and podComplete.
func writeKwokStages(path string) error {
	dir, err := moduleDir("sigs.k8s.io/kwok@" + kwokVersion)
	if err != nil {
		return err
	}
	docs := []string{podComplete}
	for _, f := range kwokUpstreamStages {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		docs = append(docs, string(b))
	}
	return os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o644)
}

// kwokVersion is the kwok release hack/e2e-binaries.sh builds.
const kwokVersion = "v0.8.0"

// moduleDir downloads a module version (from the module cache when it is there) and
// returns its directory.
func moduleDir(modVersion string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", modVersion)
	cmd.Dir = os.TempDir() // outside any module: go.mod stays as it is
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", modVersion, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", err
	}
	if mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", modVersion, mod.Error)
	}
	return mod.Dir, nil
}

// hackOutput runs a script of hack/ and returns what it printed.
func hackOutput(root, script string, args ...string) (string, error) {
	out, err := exec.Command(filepath.Join(root, "hack", script), args...).Output()
	if err != nil {
		return "", fmt.Errorf("hack/%s: %w", script, err)
	}
	return strings.TrimSpace(string(out)), nil
}
