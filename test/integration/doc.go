// Package integration holds tests that run against a real kube-apiserver and etcd
// (see package testenv): CRD installation and validation, and, as components land,
// the webhook, scheduler and autoscaler against the API server.
package integration
