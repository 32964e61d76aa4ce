package cgroup

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Owner is the pod and container a process belongs to.
type Owner struct {
	PodUID      string
	ContainerID string
}

// Resolver reads process cgroups under a proc root.
type Resolver struct {
	ProcRoot string
}

// podRE matches the pod part of a kubepods cgroup path: "pod<uid>" (cgroupfs) or
// "pod<uid with underscores>.slice" (systemd).
var podRE = regexp.MustCompile(`pod([0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12})`)

// containerRE matches a 64-hex container id, optionally wrapped by the runtime's
// systemd scope name ("cri-containerd-<id>.scope", "crio-<id>.scope", "docker-<id>.scope").
var containerRE = regexp.MustCompile(`^(?:[a-z-]+-)?([0-9a-f]{64})(?:\.scope)?$`)

// Owner returns the pod and container of pid. ok is false for a process outside any
// pod (a host process, the agent itself).
func (r Resolver) Owner(pid uint32) (o Owner, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(r.ProcRoot, strconv.FormatUint(uint64(pid), 10), "cgroup"))
	if err != nil {
		return Owner{}, false, fmt.Errorf("read cgroup of pid %d: %w", pid, err)
	}
	o, ok = Parse(b)
	return o, ok, nil
}

// Parse reads the content of a /proc/<pid>/cgroup file.
func Parse(content []byte) (Owner, bool) {
	sc := bufio.NewScanner(bytes.NewReader(content))
	for sc.Scan() {
		// hierarchy-id:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || !strings.Contains(parts[2], "kubepods") {
			continue
		}
		path := parts[2]
		m := podRE.FindStringSubmatch(path)
		if m == nil {
			continue
		}
		o := Owner{PodUID: strings.ReplaceAll(strings.ToLower(m[1]), "_", "-")}
		if c := containerRE.FindStringSubmatch(filepath.Base(path)); c != nil {
			o.ContainerID = c[1]
		}
		return o, true
	}
	return Owner{}, false
}
