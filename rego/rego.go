package rego

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/tessera-gpu/tessera/policy"
)

//go:embed policies/*.rego
var files embed.FS

// Kinds of workload the default policies decide on: Pods, Jobs, PodGroups and the
// workload controllers' custom resources the webhooks admit (webhooks.CustomWorkloads).
var workloadKinds = []string{"Pod", "Job", "PodGroup", "JobSet", "RayCluster", "RayJob", "LeaderWorkerSet", "PyTorchJob", "MPIJob"}

// defaults lists the policies in evaluation order; every other non-test file is a library.
var defaults = []struct {
	name    string
	order   int
	targets []string
}{
	{"queue", 10, workloadKinds},
	{"scheduler", 20, workloadKinds},
	{"priority", 30, workloadKinds},
	{"gang", 40, workloadKinds},
	{"gpu", 50, workloadKinds},
	{"queues", 60, []string{"Queue"}},
}

// Directory is where the sources are in this package, for messages.
const Directory = "rego/policies"

// Defaults returns the default policy set, its libraries and its tests. Policy names
// are the file names without .rego; an AdmissionPolicy of the same name replaces one.
func Defaults() (policy.Set, error) {
	read := func(name string) (policy.Module, error) {
		b, err := files.ReadFile(path.Join("policies", name))
		if err != nil {
			return policy.Module{}, err
		}
		return policy.Module{File: path.Join(Directory, name), Source: string(b)}, nil
	}
	var set policy.Set
	isPolicy := map[string]bool{}
	for _, d := range defaults {
		m, err := read(d.name + ".rego")
		if err != nil {
			return set, fmt.Errorf("default policy %s: %w", d.name, err)
		}
		isPolicy[d.name+".rego"] = true
		p := policy.Policy{Name: d.name, Order: d.order, Enforcement: policy.EnforceDeny, Targets: d.targets, Module: m}
		if t, err := read(d.name + "_test.rego"); err == nil {
			isPolicy[d.name+"_test.rego"] = true
			p.Tests = []policy.Module{t}
		}
		set.Policies = append(set.Policies, p)
	}
	entries, err := fs.ReadDir(files, "policies")
	if err != nil {
		return set, err
	}
	for _, e := range entries {
		name := e.Name()
		if isPolicy[name] {
			continue
		}
		m, err := read(name)
		if err != nil {
			return set, err
		}
		if strings.HasSuffix(name, "_test.rego") {
			set.Tests = append(set.Tests, m)
		} else {
			set.Libraries = append(set.Libraries, m)
		}
	}
	return set, nil
}
