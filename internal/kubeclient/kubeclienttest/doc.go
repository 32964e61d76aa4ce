// Package kubeclienttest holds what the tests of Tessera's commands share to reach a
// cluster: an API server that never answers, a kubeconfig that points at a server, a
// process with no cluster configured, and a free local address for a command's
// endpoints.
package kubeclienttest
