package chart

import (
	"slices"
	"strings"
	"testing"
)

// The scheduler and the autoscaler's what-if run scheduler.profile through --profile;
// scheduler.policy, the value's former name, still works and wins when set.
func TestSchedulerProfile(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{``, "--profile=tessera"},
		{`scheduler: {profile: volcano}`, "--profile=volcano"},
		{`scheduler: {policy: kube-default}`, "--profile=kube-default"},
		{`scheduler: {profile: volcano, policy: kube-default}`, "--profile=kube-default"},
	} {
		found := 0
		for _, o := range render(t, valuesSet{name: c.values, values: c.values}) {
			if o.id() != "Deployment/tessera-scheduler" && o.id() != "Deployment/tessera-autoscaler" {
				continue
			}
			found++
			cs, _ := get(o.obj, "spec", "template", "spec", "containers").([]any)
			args, _ := get(cs[0], "args").([]any)
			if !slices.Contains(args, any(c.want)) {
				t.Errorf("%q: %s args %v, want %s", c.values, o.id(), args, c.want)
			}
			for _, a := range args {
				if s, _ := a.(string); strings.HasPrefix(s, "--policy=") {
					t.Errorf("%q: %s passes %s; the flag is --profile", c.values, o.id(), s)
				}
			}
		}
		if found != 2 {
			t.Errorf("%q: %d of the scheduler and autoscaler Deployments rendered", c.values, found)
		}
	}
}
