# Tessera. `make demo` and `make test` work on a fresh machine with Go installed.
GO            ?= go
BIN           := bin/tessera
AGENT_BIN     := bin/tessera-node-agent
VERSION       ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS       := -X github.com/tessera-gpu/tessera/internal/version.Version=$(VERSION)
# go-nvml's cgo bindings (the node agent's) call NVML functions the header marks
# deprecated; gcc's -Wdeprecated-declarations warnings flood the first build. go-nvml is
# the only cgo package of the build that calls deprecated C functions, so this silences
# nothing else.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
CONTROLLER_GEN := $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
STATICCHECK   := $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
GENERATED     := api deploy/crds deploy/helm/tessera/crds deploy/kustomize/base docs/reference volcano/testdata/jobset
CHART         := deploy/helm/tessera

.PHONY: all build images test chart-test unit integration rules-test fuzz k8s-binaries e2e-binaries e2e faults dev-cluster lint generate verify demo figures bench bench-scheduler clean

all: build

## build: bin/tessera, the control plane (pure Go, static: cgo off), and
## bin/tessera-node-agent, the node agent (cgo: go-nvml loads NVML at run time)
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tessera
	CGO_ENABLED=1 $(GO) build -ldflags "$(LDFLAGS)" -o $(AGENT_BIN) ./cmd/tessera-node-agent

## images: build both images (Dockerfile, Dockerfile.node-agent) and push them as
## $(REGISTRY)/tessera:$(TAG) and $(REGISTRY)/tessera-node-agent:$(TAG), with Docker, Podman
## or Buildah (hack/images.sh says what is missing). None are published: the chart needs
## them (image.repository, image.tag, nodeAgent.image.repository)
REGISTRY ?=
TAG      ?= $(VERSION)
images:
	@REGISTRY="$(REGISTRY)" TAG="$(TAG)" VERSION="$(VERSION)" hack/images.sh

## k8s-binaries: build kube-apiserver and etcd from the module proxy (cached in ~/.cache/tessera)
k8s-binaries:
	@hack/k8s-binaries.sh >/dev/null

## e2e-binaries: build what the end-to-end tests run (kube-apiserver, kube-controller-manager,
## etcd, kwok, the Cluster API core manager, Flux's source- and kustomize-controller) from the
## module proxy, cached in ~/.cache/tessera/e2e; about 22 minutes on 2 cores the first time
e2e-binaries:
	@hack/e2e-binaries.sh >/dev/null

## e2e: the whole system on a local control plane (test/e2e): a Git commit synced by Flux,
## plain Jobs defaulted by the webhook, gangs, slices, preemption, idle nodes removed
## through Cluster API, the scale-down alert in Prometheus, a broken policy rejected; with
## the scheduler, autoscaler and webhook killed or restarted on the way. Prints a timeline.
## Then the user guide on the cluster of dev-cluster: every runnable block of the README's
## install section, docs/getting-started.md and docs/migrating-from-volcano.md (TestGuidePages).
e2e: e2e-binaries
	@hack/ensure-promtool.sh
	TESSERA_E2E=1 $(GO) test -count=1 -timeout 45m -v -run 'TestEndToEnd|TestGuidePages' ./test/e2e

## faults: faults injected into the end-to-end cluster (test/faults): Tessera built with its
## fault points (-tags faults), two replicas of the scheduler and the autoscaler, a mixed
## workload; every fault point crashed, failed or delayed, the API server and etcd killed,
## the invariants checked after each recovery. Ends with a table of fault points x faults
## x violations x recovery and "N faults injected at M fault points, V violations". The
## CI schedule is seed 1 (every point once); FAULT_SEEDS=1-25 make faults is the long one;
## FAULT_POINTS=process/kube-apiserver,... keeps only those points of each schedule
FAULT_SEEDS ?=
FAULT_POINTS ?=
faults: e2e-binaries
	$(GO) test -count=1 -tags faults ./internal/failpoint
	TESSERA_FAULTS=1 FAULT_SEEDS="$(FAULT_SEEDS)" FAULT_POINTS="$(FAULT_POINTS)" $(GO) test -count=1 -timeout 0 -v -run TestFaults ./test/faults

## dev-cluster: the same cluster with Tessera running on fake GPU nodes, to try it without
## GPUs; prints a KUBECONFIG and commands to try; Ctrl-C tears it down
dev-cluster: e2e-binaries
	@hack/ensure-promtool.sh
	$(GO) run ./test/e2e/devcluster

## test: unit and integration tests (integration against a real kube-apiserver + etcd),
## Rego tests (through go test), Prometheus rule tests (promtool) and the chart's tests
test: k8s-binaries rules-test
	KUBEBUILDER_ASSETS="$$(hack/k8s-binaries.sh)" TESSERA_REQUIRE_K8S=1 $(GO) test -count=1 ./...
	@$(MAKE) -s chart-test

## chart-test: the Helm chart rendered for several values sets, linted, checked and applied
## with server-side dry-run against a real API server (module test/chart, Helm SDK)
chart-test: k8s-binaries
	cd test/chart && KUBEBUILDER_ASSETS="$$(../../hack/k8s-binaries.sh)" TESSERA_REQUIRE_K8S=1 $(GO) test -count=1 ./...

## rules-test: promtool unit tests of every alerting rule file that has a *.test.yaml
rules-test:
	@hack/ensure-promtool.sh
	@set -e; for t in $$(git ls-files --cached --others --exclude-standard 'deploy/*.test.yaml'); do \
	  (cd $$(dirname $$t) && promtool test rules $$(basename $$t)); done

unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /test/)

## fuzz: the fuzz targets of what reads untrusted input (a pull request's
## kustomizations, Volcano objects to convert, the cluster dumps of preview and
## simulate, custom resources validated offline) for FUZZTIME each, one after the
## other (about a minute in all with a warm build cache); CI runs it after test. A
## failing input is saved under the package's testdata/fuzz/ and replayed by go test
## from then on. FUZZTIME is a count of inputs, not a duration: with a duration, Go's
## fuzzing coordinator can report its own deadline as a failure when a worker is
## still running an input as time runs out (golang/go#75804), with no input to blame
FUZZTIME     ?= 5000x
FUZZ_TARGETS := gitops/lint:FuzzLint volcano:FuzzConvert gitops/preview:FuzzInput sim/trace:FuzzDecodeManifests deploy/crds:FuzzDefaultAndValidate
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "fuzz $${t#*:} (./$${t%%:*}, $(FUZZTIME))"; \
	  $(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) ./$${t%%:*}; \
	done

integration: k8s-binaries
	KUBEBUILDER_ASSETS="$$(hack/k8s-binaries.sh)" TESSERA_REQUIRE_K8S=1 $(GO) test -count=1 ./test/...

lint:
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	cd test/chart && $(GO) vet ./... && $(STATICCHECK) ./...

## generate: deepcopy and CRD manifests from the kubebuilder markers in api/; the chart's
## CRDs from deploy/crds; the kustomize base rendered from the chart (test/chart module);
## the references in docs/reference and the JobSet conversions in volcano/testdata/jobset
generate:
	$(CONTROLLER_GEN) object paths=./api/... crd:crdVersions=v1 output:crd:artifacts:config=deploy/crds
	rm -f $(CHART)/crds/*.yaml && cp deploy/crds/tessera.dev_*.yaml $(CHART)/crds/
	cd test/chart && $(GO) run ./cmd/render -chart ../../$(CHART) -values ../../deploy/kustomize/values.yaml \
	  -out ../../deploy/kustomize/base
	TESSERA_UPDATE_REFERENCE=1 $(GO) test -count=1 -run TestCLIReference ./cmd/tessera ./cmd/tessera-node-agent
	TESSERA_UPDATE_REFERENCE=1 $(GO) test -count=1 -run TestSchedulerConfigReference ./scheduler
	TESSERA_UPDATE_REFERENCE=1 $(GO) test -count=1 -run TestCRDReference ./deploy/crds
	cd test/chart && TESSERA_UPDATE_REFERENCE=1 $(GO) test -count=1 -run TestMetricsReference .
	TESSERA_UPDATE_REFERENCE=1 $(GO) test -count=1 -run TestPolicyInputReference ./webhooks
	TESSERA_UPDATE_REFERENCE=1 $(GO) test -count=1 -run TestLabelsReference ./test/docs
	TESSERA_UPDATE_REFERENCE=1 $(GO) test -count=1 -run TestConvertJobSetGolden ./volcano

## verify: fail when generated files are stale (regenerating changes them)
verify:
	@state() { git status --porcelain -- $(GENERATED); git diff -- $(GENERATED) | sha256sum; }; \
	  before=$$(state); $(MAKE) -s generate; after=$$(state); \
	  if [ "$$before" != "$$after" ]; then \
	    echo "generated files are stale; run 'make generate' and commit:"; git status --porcelain -- $(GENERATED); exit 1; fi

## demo: the built-in operator scenario (kube-default vs the three Volcano configurations vs tessera) and the Alibaba openb
## trace (bestfit vs fgd vs tessera, 3 seeds), with HTML reports in out/
demo: build
	@mkdir -p out
	./$(BIN) simulate --scenario operator --profile kube-default,volcano,volcano-seed,volcano-capacity,tessera --seeds 3 --report out/demo-operator.html
	./$(BIN) simulate --trace default --profile bestfit,fgd,tessera --seeds 3 --report out/demo-openb.html

## figures: rerun the commands behind the README's measured tables (the simulator's, the
## benchmarks that need no cluster) and write their output between the
## <!-- figures: COMMAND --> and <!-- /figures --> markers of README.md and docs/*.md;
## FIGURES=SUBSTRING reruns only the blocks whose command contains it. Not part of test:
## all blocks take about 24 minutes of CPU (the right-sizing blocks with --every-autoscaler
## about 6.5 of them; an hour on a busy 2-core machine)
figures: build
	$(GO) run ./hack/figures -only "$(FIGURES)"

## bench-scheduler: pods bound per second on a real API server (1,000 nodes x 8 GPUs,
## 7,000 one-GPU pods, alone and in gangs of 8): Tessera (bin/tessera scheduler, its own
## process), kube-scheduler and the API server's ceiling in one run, with each
## scheduler's peak RSS; writes out/bench-scheduler.json. BENCH_SCHEDULER_FLAGS picks
## other cases: -cases single5k,churn5k (5,000 nodes: 35,000 pods; 70% full with 100
## pods/s created and deleted for 3 minutes, bind latency p50/p99), dra5k (5,000 nodes
## publishing ResourceSlices, 5,000 pods with a ResourceClaim each, then 20 pods/s for
## 15 s: rate and bind latency p50/p99 against the same pods with the extended resource),
## sizes -nodes -pods -big-nodes -big-pods -dra-pods -churn-duration ..., -rounds 3 for
## medians of three rounds, -watched-ceiling for the ceiling of binds that write what
## Tessera's write while a cache watches every pod, -apiserver-profile 3s for the API
## server's CPU profiles
bench-scheduler: k8s-binaries
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tessera
	KUBEBUILDER_ASSETS="$$(hack/k8s-binaries.sh)" $(GO) run ./test/benchscheduler -tessera $(BIN) \
	  -kube-scheduler "$$(hack/kube-scheduler.sh)" -o out/bench-scheduler.json $(BENCH_SCHEDULER_FLAGS)

## bench: the performance targets' benchmarks (scheduler core, admission, pod-create
## overhead through the real API server) and one timed fill-up run per profile
bench: k8s-binaries build
	$(GO) test ./scheduler/ -run '^$$' -bench BenchmarkAllocate -benchtime 1x -count 3 -benchmem
	KUBEBUILDER_ASSETS="$$(hack/k8s-binaries.sh)" TESSERA_REQUIRE_K8S=1 $(GO) test ./webhooks/ -run '^$$' \
	  -bench 'BenchmarkAdmission|BenchmarkPodCreateOverhead' -benchtime 2000x -count 3
	./$(BIN) simulate --trace default --profile bestfit,fgd,tessera --seeds 3

clean:
	rm -rf bin
