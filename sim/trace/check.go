package trace

import (
	"fmt"
	"maps"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// checkJob refuses what the API server refuses of the Job fields the simulator reads:
// a negative parallelism (the simulator would make no pod and say nothing),
// completions or backoffLimit.
func checkJob(j *batchv1.Job) error {
	for _, f := range []struct {
		field string
		v     *int32
	}{{"spec.parallelism", j.Spec.Parallelism}, {"spec.completions", j.Spec.Completions}, {"spec.backoffLimit", j.Spec.BackoffLimit}} {
		if f.v != nil && *f.v < 0 {
			return fmt.Errorf("%s: %d is negative; the API server refuses it (use 0 or more)", f.field, *f.v)
		}
	}
	return nil
}

// checkPodSpec refuses what the API server refuses of the pod fields the simulator
// reads (field is where spec is: "spec" of a Pod, "spec.template.spec" of a Job): no
// containers, a negative request or limit, a request above its limit.
func checkPodSpec(spec *corev1.PodSpec, field string) error {
	if len(spec.Containers) == 0 {
		return fmt.Errorf("%s.containers: a pod needs at least one container; the API server refuses it", field)
	}
	for _, group := range []struct {
		name string
		cs   []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i, c := range group.cs {
			at := fmt.Sprintf("%s.%s[%d].resources", field, group.name, i)
			for _, kind := range []struct {
				name string
				rl   corev1.ResourceList
			}{{"requests", c.Resources.Requests}, {"limits", c.Resources.Limits}} {
				for _, r := range slices.Sorted(maps.Keys(kind.rl)) {
					if q := kind.rl[r]; q.Sign() < 0 {
						return fmt.Errorf("%s.%s[%s]: %s is negative; the API server refuses it", at, kind.name, r, q.String())
					}
				}
			}
			for _, r := range slices.Sorted(maps.Keys(c.Resources.Requests)) {
				req := c.Resources.Requests[r]
				if lim, ok := c.Resources.Limits[r]; ok && req.Cmp(lim) > 0 {
					return fmt.Errorf("%s.requests[%s]: %s is more than its limit %s; the API server refuses it", at, r, req.String(), lim.String())
				}
			}
		}
	}
	return nil
}
