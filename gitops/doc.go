// Package gitops holds the repository operators fork to run Tessera from Git, and its
// checks. clusters/<name>/ is one cluster's queues, priority classes, admission policies,
// scale-down policy and namespaces, as kustomizations; flux/ syncs it with Flux (health
// checks on Tessera's kinds), argocd/ with Argo CD (sync waves, the autoscaler owning
// MachineDeployment replicas, and Lua health checks for Tessera's kinds in
// argocd/health, tested here with the interpreter Argo CD uses).
package gitops
