// Package podrequests is Tessera's one definition of what a pod asks of a node, shared
// by the admission webhooks and the scheduler's snapshot builder so that the two never
// disagree: component-helpers' PodRequests (sidecar init containers that keep running
// add to the containers' sum, other init containers count their maximum, pod overhead
// adds), with limits filling requests a container leaves out, as the API server
// defaults them.
package podrequests

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Of returns what the pod asks of a node.
func Of(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(WithDefaultedRequests(p), resourcehelper.PodResourcesOptions{})
}

// WithDefaultedRequests returns p, or a copy whose containers request what they only
// limit (hand-written manifests often state only limits for extended resources).
func WithDefaultedRequests(p *corev1.Pod) *corev1.Pod {
	needs := func(cs []corev1.Container) bool {
		for i := range cs {
			for name := range cs[i].Resources.Limits {
				if _, ok := cs[i].Resources.Requests[name]; !ok {
					return true
				}
			}
		}
		return false
	}
	if !needs(p.Spec.Containers) && !needs(p.Spec.InitContainers) {
		return p
	}
	fix := func(cs []corev1.Container) []corev1.Container {
		out := slices.Clone(cs)
		for i := range out {
			out[i].Resources.Requests = DefaultedRequests(out[i].Resources)
		}
		return out
	}
	c := *p
	c.Spec.Containers = fix(p.Spec.Containers)
	c.Spec.InitContainers = fix(p.Spec.InitContainers)
	return &c
}

// DefaultedRequests is what a container requests once its limits fill the requests it
// leaves out, as the API server defaults them: r.Requests itself when nothing is
// missing, else a new list.
func DefaultedRequests(r corev1.ResourceRequirements) corev1.ResourceList {
	req, copied := r.Requests, false
	for name, q := range r.Limits {
		if _, ok := req[name]; ok {
			continue
		}
		if !copied {
			req, copied = make(corev1.ResourceList, len(r.Requests)+len(r.Limits)), true
			maps.Copy(req, r.Requests)
		}
		req[name] = q
	}
	return req
}
