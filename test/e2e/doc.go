// Package e2e runs the whole system on a local control plane: etcd, kube-apiserver and
// kube-controller-manager; kwok, so fake nodes' pods really run and complete; Cluster
// API's core controllers with a minimal infrastructure provider whose Machines become
// kwok Nodes of the same API server; Flux's source- and kustomize-controller syncing a
// git repository served on 127.0.0.1; Tessera's scheduler, webhook (over TLS),
// autoscaler and one node agent per node on simulated GPUs, each its node's DRA driver
// gpu.tessera.dev (GPUs in EXCLUSIVE_PROCESS mode with a stand-in MPS control daemon, so
// shared by memory; kube-controller-manager's resource claim controller makes pods'
// claims from their templates, and the test plays the kubelet towards one agent's
// plugin); and Prometheus scraping them with deploy/'s rules. Every component is a process the harness starts and stops by
// PID; their logs are kept for a failed run.
//
// The other projects' binaries are built by hack/e2e-binaries.sh and cached under
// $HOME/.cache/tessera; Tessera's two, tessera (static, cgo off) and tessera-node-agent
// (cgo), are built from this checkout at start, as `make build` builds them.
// `make e2e` runs the scenario (TestEndToEnd), then the user guide (TestGuidePages): the
// runnable blocks of the README's install section, docs/getting-started.md,
// docs/migrating-from-volcano.md and docs/migrating-from-kueue.md, on the cluster
// `make dev-cluster` brings up to try
// (StartDev).
// Without TESSERA_E2E=1 the tests skip.
package e2e
