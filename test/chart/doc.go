// Package chart renders deploy/helm/tessera through the Helm SDK: the kustomize base
// (cmd/render, run by `make generate`) and the chart's tests (lint, values sets,
// server-side dry-run against a real API server, checks over every rendered object).
//
// It is a module of its own so that the Helm SDK stays out of the main module's go.mod.
package chart
