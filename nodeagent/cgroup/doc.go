// Package cgroup maps a process to the Kubernetes pod and container it runs in, by
// reading /proc/<pid>/cgroup (cgroup v1 and v2, cgroupfs and systemd drivers, the
// containerd, CRI-O and Docker runtimes). The proc root is a parameter so tests can use
// a fake tree and the agent can read the host's /proc from a container.
package cgroup
