// Package testenv starts a real kube-apiserver and etcd (controller-runtime envtest)
// with Tessera's CRDs installed, for integration tests.
//
// The binaries are built from the Go module proxy by hack/k8s-binaries.sh and cached
// under $HOME/.cache/tessera/k8s/<version>; KUBEBUILDER_ASSETS overrides the location.
// When neither is available, tests skip with instructions unless TESSERA_REQUIRE_K8S=1
// (set by `make test`), in which case they fail.
package testenv
