package preview

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/gitops/lint"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// managed are the kinds a preview takes from the repository; the others a
// kustomization lists (Kustomization, ConfigMap, ...) change neither where pods go nor
// which nodes are removed.
var managed = map[string]bool{"Queue": true, "AdmissionPolicy": true, "PriorityClass": true, "Namespace": true, "ScaleDownPolicy": true}

// Load builds the kustomization in dir with kustomize, as Flux or Argo CD would before
// applying it, and reads the objects of the managed kinds, defaulted and validated as
// ReadManifests does.
func Load(dir string) (*trace.Manifests, error) {
	built, err := lint.Build(dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	out := &trace.Manifests{}
	yr := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(built)))
	for doc := 1; ; doc++ {
		raw, err := yr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s:doc %d: %w", dir, doc, err)
		}
		var h struct{ Kind string }
		if err := yaml.Unmarshal(raw, &h); err != nil {
			return nil, fmt.Errorf("%s:doc %d: %w", dir, doc, err)
		}
		if !managed[h.Kind] {
			continue
		}
		m, err := trace.DecodeManifests(bytes.NewReader(raw), fmt.Sprintf("%s (built, doc %d)", dir, doc))
		if err != nil {
			return nil, err
		}
		out.Queues = append(out.Queues, m.Queues...)
		out.AdmissionPolicies = append(out.AdmissionPolicies, m.AdmissionPolicies...)
		out.PriorityClasses = append(out.PriorityClasses, m.PriorityClasses...)
		out.Namespaces = append(out.Namespaces, m.Namespaces...)
		out.ScaleDownPolicies = append(out.ScaleDownPolicies, m.ScaleDownPolicies...)
	}
}

// Overlay lays the repository's objects over the cluster's: the repository is the
// source of truth for Queues, AdmissionPolicies and ScaleDownPolicies (the cluster's
// are replaced, as a GitOps sync with pruning would), and its PriorityClasses and
// Namespaces replace the cluster's of the same name. cluster is not changed.
func Overlay(cluster, repo *trace.Manifests) *trace.Manifests {
	out := *cluster
	out.Queues = repo.Queues
	out.AdmissionPolicies = repo.AdmissionPolicies
	out.ScaleDownPolicies = repo.ScaleDownPolicies
	out.PriorityClasses = replaceByName(cluster.PriorityClasses, repo.PriorityClasses, func(o *schedulingv1.PriorityClass) string { return o.Name })
	out.Namespaces = replaceByName(cluster.Namespaces, repo.Namespaces, func(o *corev1.Namespace) string { return o.Name })
	return &out
}

// replaceByName is base with the items of over replacing those of the same name, and
// over's other items appended.
func replaceByName[T any](base, over []T, name func(*T) string) []T {
	idx := map[string]int{}
	out := slices.Clone(base)
	for i := range out {
		idx[name(&out[i])] = i
	}
	for i := range over {
		if j, ok := idx[name(&over[i])]; ok {
			out[j] = over[i]
			continue
		}
		out = append(out, over[i])
	}
	return out
}
