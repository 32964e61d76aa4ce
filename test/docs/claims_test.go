package docs

// What the task pages say a reader should see after a command that needs a live cluster
// (kubectl after `make dev-cluster` or `helm install`) cannot be compared with real
// output here; test/e2e runs those commands. What such a page quotes of that output is
// checked instead against what prints it: the string or format in the code, the
// configuration the cluster is made from. Each claim is a quote of the page and the
// place it comes from, so that a changed message, name or setting fails here until the
// page follows.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// claim is a quote of a page and what in the repository it comes from.
type claim struct {
	page  string // under the repository root
	quote string // text of the page, white space folded
	file  string // the file that prints or sets it
	code  string // text of file that prints or sets it
	// format: code is a Go format string, and quote must be something it prints.
	format bool
}

var claims = []claim{
	// docs/getting-started.md, step 1: what `make dev-cluster` prints.
	{page: "docs/getting-started.md", quote: "Flux applied gitops/clusters/example (commit 1a2b3c4d)", file: "test/e2e/devcluster/main.go", code: "Flux applied gitops/clusters/example (commit %s)", format: true},
	{page: "docs/getting-started.md", quote: "Tessera is running on 4 fake GPU nodes. In another shell:", file: "test/e2e/devcluster/main.go", code: "Tessera is running on %d fake GPU nodes. In another shell:", format: true},
	{page: "docs/getting-started.md", quote: "Tessera is running on 4 fake GPU nodes.", file: "test/e2e/dev.go", code: "DevNodes = 4"},
	{page: "docs/getting-started.md", quote: "export KUBECONFIG=/tmp/.../kubeconfig", file: "test/e2e/devcluster/main.go", code: "  export KUBECONFIG=%s"},
	// Step 2: the nodes, queues, policy and namespaces of the example configuration.
	{page: "docs/getting-started.md", quote: "4 nodes, each with `GPU-MODEL` `NVIDIA-A100-SXM4-80GB`", file: "test/e2e/dev.go", code: `DevGPUs = "dgxa100-80gb"`},
	{page: "docs/getting-started.md", quote: "`GPU-MODEL` `NVIDIA-A100-SXM4-80GB`", file: "gitops/clusters/example/scaledown/scaledown.yaml", code: "tessera.dev/gpu-model: NVIDIA-A100-SXM4-80GB"},
	{page: "docs/getting-started.md", quote: "the Queues `train-prod` and `train-dev`", file: "gitops/clusters/example/queues/queues.yaml", code: "name: train-prod"},
	{page: "docs/getting-started.md", quote: "the Queues `train-prod` and `train-dev`", file: "gitops/clusters/example/queues/queues.yaml", code: "name: train-dev"},
	{page: "docs/getting-started.md", quote: "the ScaleDownPolicy `idle-gpu-nodes`", file: "gitops/clusters/example/scaledown/scaledown.yaml", code: "name: idle-gpu-nodes"},
	{page: "docs/getting-started.md", quote: "(`Idle-After` 60s in this cluster;", file: "api/v1alpha1/scaledownpolicy_types.go", code: `name="Idle-After"`},
	{page: "docs/getting-started.md", quote: "(`Idle-After` 60s in this cluster;", file: "test/e2e/testdata/e2e/kustomization.yaml", code: "/spec/idleAfter, value: 60s"},
	{page: "docs/getting-started.md", quote: "the example in git says 10m)", file: "gitops/clusters/example/scaledown/scaledown.yaml", code: "idleAfter: 10m"},
	{page: "docs/getting-started.md", quote: "`research` on queue `train-dev` with priority `batch-normal`", file: "gitops/clusters/example/namespaces/namespaces.yaml", code: "tessera.dev/queue: train-dev\n    tessera.dev/priority-class: batch-normal"},
	{page: "docs/getting-started.md", quote: "`pretraining` on `train-prod` with `production-high`", file: "gitops/clusters/example/namespaces/namespaces.yaml", code: "tessera.dev/queue: train-prod\n    tessera.dev/priority-class: production-high"},
	{page: "docs/getting-started.md", quote: "down to the policy's `minNodes: 2`", file: "gitops/clusters/example/scaledown/scaledown.yaml", code: "minNodes: 2"},
	// Step 4: the gang of a short queue's Job of 2 pods: 80% of the pods, rounded up.
	{page: "docs/getting-started.md", quote: "queue `train-dev` runs short jobs", file: "gitops/clusters/example/queues/queues.yaml", code: "name: train-dev\n  annotations:\n    tessera.dev/runtime: short"},
	{page: "docs/getting-started.md", quote: "`tessera.dev/rewrite-nvidia-gpu: \"true\"`", file: "gitops/clusters/example/namespaces/namespaces.yaml", code: "tessera.dev/priority-class: batch-normal\n    tessera.dev/rewrite-nvidia-gpu: \"true\""},
	// Step 7: what `tessera autoscaler plan` prints.
	{page: "docs/getting-started.md", quote: "`maxParallel` nodes at a time (4 here)", file: "test/e2e/testdata/e2e/kustomization.yaml", code: "/spec/maxParallel, value: 4"},
	{page: "docs/getting-started.md", quote: "(`NotIdle`,", file: "autoscale/rules.go", code: `ReasonNotIdle           = "NotIdle"`},
	{page: "docs/getting-started.md", quote: "2 GPU pods hold 8.0 of 8 GPUs", file: "autoscale/plan.go", code: "%d GPU pods hold %.1f of %d GPUs", format: true},
	{page: "docs/getting-started.md", quote: "Empty for 12s of 1m0s", file: "autoscale/plan.go", code: "%s for %s of %s", format: true},
	{page: "docs/getting-started.md", quote: "(method `Empty`)", file: "autoscale/method.go", code: `func (Empty) Name() string { return "Empty" }`},
	{page: "docs/getting-started.md", quote: "the MachineDeployment `gpu-a100` (namespace `fleet`)", file: "test/e2e/cluster.go", code: `DeploymentName   = "gpu-a100"`},
	{page: "docs/getting-started.md", quote: "the MachineDeployment `gpu-a100` (namespace `fleet`)", file: "test/e2e/cluster.go", code: `ClusterNamespace = "fleet"`},
	// docs/migrating-from-volcano.md, step 5: `helm test` and the Queues.
	{page: "docs/migrating-from-volcano.md", quote: "You should see the test Pod succeed: the webhook answers and a scheduler holds its Lease.", file: "deploy/helm/tessera/templates/tests/smoke.yaml", code: `resources: ["leases"]`},
	{page: "docs/migrating-from-volcano.md", quote: "You should see `train-prod` and `train-dev`.", file: "test/docs/testdata/cluster.yaml", code: "kind: Queue\n  metadata:\n    name: train-prod"},
	{page: "docs/migrating-from-volcano.md", quote: "You should see `train-prod` and `train-dev`.", file: "test/docs/testdata/cluster.yaml", code: "kind: Queue\n  metadata:\n    name: train-dev"},
	// docs/migrating-from-kueue.md: the webhook's denial of an unknown queue, and the
	// dev cluster's queue that step 4's Job names through Kueue's label.
	{page: "docs/migrating-from-kueue.md", quote: "`queue: queue \"user-queue\" does not exist (known queues: [team-a]); create the Queue or set label tessera.dev/queue to an existing one`", file: "rego/policies/queue.rego", code: "queue %q does not exist (known queues: [%s]); create the Queue or set label tessera.dev/queue to an existing one", format: true},
	{page: "docs/migrating-from-kueue.md", quote: "a Job of 2 pods labelled with Kueue's queue name `train-dev`", file: "gitops/clusters/example/queues/queues.yaml", code: "name: train-dev"},
	{page: "docs/migrating-from-kueue.md", quote: "a Job of 2 pods labelled with Kueue's queue name `train-dev`", file: "rego/policies/queue.rego", code: `q := lib.label_or_annotation("kueue.x-k8s.io/queue-name")`},
	// docs/install.md, GPU nodes and the NVIDIA GPU Operator: the chart's defaults that the
	// checklist says to keep or change, and the platform namespace label.
	{page: "docs/install.md", quote: "by default `feature.node.kubernetes.io/pci-10de.present: \"true\"`", file: "deploy/helm/tessera/values.yaml", code: "feature.node.kubernetes.io/pci-10de.present: \"true\""},
	{page: "docs/install.md", quote: "The agent's pods use `nodeAgent.runtimeClassName`, by default `nvidia`", file: "deploy/helm/tessera/values.yaml", code: "runtimeClassName: nvidia"},
	{page: "docs/install.md", quote: "The default `nodeAgent.deviceListStrategy: cdi-cri` hands each container the CDI devices `nvidia.com/gpu=<GPU UUID>`", file: "deploy/helm/tessera/values.yaml", code: "deviceListStrategy: cdi-cri"},
	{page: "docs/install.md", quote: "The default `nodeAgent.deviceListStrategy: cdi-cri` hands each container the CDI devices `nvidia.com/gpu=<GPU UUID>`", file: "deploy/helm/tessera/values.yaml", code: "cdiKind: nvidia.com/gpu"},
	{page: "docs/install.md", quote: "the `/etc/nvidia-container-runtime/config.toml` a package install writes and the chart reads by default", file: "deploy/helm/tessera/values.yaml", code: "toolkitConfig: /etc/nvidia-container-runtime/config.toml"},
	{page: "docs/install.md", quote: "kubectl label namespace gpu-operator tessera.dev/platform=true", file: "rego/policies/lib.rego", code: `"tessera.dev/platform", "") == "true"`},
}

func TestClusterOutputClaims(t *testing.T) {
	root := filepath.Join("..", "..")
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	fold := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, c := range claims {
		if page := fold(read(c.page)); !strings.Contains(page, fold(c.quote)) {
			t.Errorf("%s no longer says %q: update the claim with the page", c.page, c.quote)
			continue
		}
		src := read(c.file)
		if !strings.Contains(src, c.code) {
			t.Errorf("%s quotes %q, which comes from %q in %s; %s no longer has it: update the page", c.page, c.quote, c.code, c.file, c.file)
			continue
		}
		if c.format {
			if re := formatRegexp(c.code); !re.MatchString(c.quote) {
				t.Errorf("%s quotes %q, which %s cannot print with %q: update the page", c.page, c.quote, c.file, c.code)
			}
		}
	}
}

// formatRegexp turns a Go format string into a regexp that matches what it can print,
// anywhere in a string: each verb matches a run of non-space characters.
func formatRegexp(format string) *regexp.Regexp {
	verb := regexp.MustCompile(`%[-+# 0]*[0-9]*(\.[0-9]+)?[a-zA-Z]`)
	var b strings.Builder
	last := 0
	for _, m := range verb.FindAllStringIndex(format, -1) {
		b.WriteString(regexp.QuoteMeta(format[last:m[0]]))
		b.WriteString(`\S+`)
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(format[last:]))
	return regexp.MustCompile(b.String())
}

func TestFormatRegexp(t *testing.T) {
	for format, want := range map[string]string{
		"%d GPU pods hold %.1f of %d GPUs": "2 GPU pods hold 8.0 of 8 GPUs",
		"%s for %s of %s":                  "Empty for 12s of 1m0s",
	} {
		if !formatRegexp(format).MatchString(want) {
			t.Errorf("%q does not match %q", format, want)
		}
	}
	if formatRegexp("%d GPU pods").MatchString("two GPU pod") {
		t.Error("matched what the format cannot print")
	}
}
