package webhooks

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestPrivilegeGuard(t *testing.T) {
	g := &PrivilegeGuard{SystemNamespaces: []string{"kube-system", DefaultNamespace}}
	pod := func(mod func(*corev1.PodSpec)) *corev1.Pod {
		p := guardPod(nil)
		mod(&p.Spec)
		return p
	}
	sc := func(s *corev1.SecurityContext) func(*corev1.PodSpec) {
		return func(p *corev1.PodSpec) { p.Containers[0].SecurityContext = s }
	}
	hostPath := func(path string) func(*corev1.PodSpec) {
		return func(p *corev1.PodSpec) {
			p.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}}
		}
	}
	privileged := sc(&corev1.SecurityContext{Privileged: ptr.To(true)})
	create := func(obj any) *admissionv1.AdmissionRequest {
		return guardRequest(t, KindPod, admissionv1.Create, guardTenant, obj, nil)
	}
	job := &batchv1.Job{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: pod(privileged).Spec}}}
	deploy := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: pod(hostPath("/dev/nvidia0")).Spec}}}
	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: pod(privileged).Spec}}}
	ephemeral := pod(func(p *corev1.PodSpec) {
		p.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}
	})
	ephemeralReq := guardRequest(t, KindPod, admissionv1.Update, guardTenant, ephemeral, guardPod(nil))
	ephemeralReq.SubResource = "ephemeralcontainers"
	inSystem := create(pod(privileged))
	inSystem.Namespace = "kube-system"
	fromDaemonSet := create(pod(privileged))
	fromDaemonSet.UserInfo.Username = DaemonSetControllerUser
	for _, c := range []struct {
		name string
		req  *admissionv1.AdmissionRequest
		want []string // nil: allowed
	}{
		{"plain", create(pod(func(*corev1.PodSpec) {})), nil},
		{"privileged", create(pod(privileged)), []string{`spec.containers[0] (name "main") securityContext.privileged`, "remove it and request GPUs"}},
		{"privileged false", create(pod(sc(&corev1.SecurityContext{Privileged: ptr.To(false)}))), nil},
		{"SYS_ADMIN", create(pod(sc(&corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE", "SYS_ADMIN"}}}))),
			[]string{"securityContext.capabilities.add SYS_ADMIN", "remove the capability"}},
		{"CAP_SYS_ADMIN", create(pod(sc(&corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CAP_SYS_ADMIN"}}}))),
			[]string{"capabilities.add CAP_SYS_ADMIN"}},
		{"ALL", create(pod(sc(&corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"ALL"}}}))), []string{"capabilities.add ALL"}},
		{"other capability", create(pod(sc(&corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}))), nil},
		{"init container", create(pod(func(p *corev1.PodSpec) {
			p.InitContainers = []corev1.Container{{Name: "setup", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}
		})), []string{`spec.initContainers[0] (name "setup") securityContext.privileged`}},
		{"hostPath /dev", create(pod(hostPath("/dev"))), []string{`spec.volumes[0] (name "host") hostPath "/dev"`, "remove the volume"}},
		{"hostPath /dev/nvidia0", create(pod(hostPath("/dev/nvidia0"))), []string{`hostPath "/dev/nvidia0"`}},
		{"hostPath /", create(pod(hostPath("/"))), []string{`hostPath "/"`}},
		{"hostPath /usr", create(pod(hostPath("/usr/"))), []string{`hostPath "/usr/"`}},
		{"hostPath libnvidia", create(pod(hostPath("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"))), []string{"libnvidia-ml.so.1"}},
		{"hostPath /run/nvidia", create(pod(hostPath("/run/nvidia/driver"))), []string{`"/run/nvidia/driver"`}},
		{"hostPath /usr/local/nvidia", create(pod(hostPath("/usr/local/nvidia"))), []string{`"/usr/local/nvidia"`}},
		{"hostPath /devices", create(pod(hostPath("/devices"))), nil},
		{"hostPath /var/log", create(pod(hostPath("/var/log"))), nil},
		{"hostPID", create(pod(func(p *corev1.PodSpec) { p.HostPID = true })), []string{"spec.hostPID", "remove hostPID"}},
		{"Job template", guardRequest(t, KindJob, admissionv1.Create, guardTenant, job, nil),
			[]string{`spec.template.spec.containers[0] (name "main") securityContext.privileged`}},
		{"Deployment update", guardRequest(t, KindDeployment, admissionv1.Update, guardTenant, deploy, deploy),
			[]string{`spec.template.spec.volumes[0] (name "host") hostPath "/dev/nvidia0"`}},
		{"ephemeral container", ephemeralReq, []string{`spec.ephemeralContainers[0] (name "debug") securityContext.privileged`}},
		{"DaemonSet", guardRequest(t, KindDaemonSet, admissionv1.Create, guardTenant, ds, nil), nil},
		{"DaemonSet's pod", fromDaemonSet, nil},
		{"kube-system", inSystem, nil},
		{"pod update", guardRequest(t, KindPod, admissionv1.Update, guardTenant, pod(privileged), pod(privileged)), nil},
	} {
		wantRefusal(t, c.name, g.Check(c.req), c.want)
	}
}
