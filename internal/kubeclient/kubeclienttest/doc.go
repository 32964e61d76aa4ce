// Package kubeclienttest holds what the tests of Tessera's commands share to reach a
// cluster: an API server that never answers, a kubeconfig that points at a server, and
// a process with no cluster configured.
package kubeclienttest
