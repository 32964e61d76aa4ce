//go:build !kustomize_disable_go_plugin_support

package main

// The tessera binary links kustomize's API (gitops lint and preview). Without the tag
// kustomize_disable_go_plugin_support, kustomize imports Go's plugin package; with cgo
// on, the Go linker then marks the binary for immediate symbol binding, and it fails at
// start on the NVML symbols go-nvml leaves unresolved until libnvidia-ml is loaded.
// This file stops such a build with the fix in the error: build with `make build`, or
// pass -tags kustomize_disable_go_plugin_support to go build, go test and go vet.
var _ = build_with_make_or_go_build_tags_kustomize_disable_go_plugin_support
