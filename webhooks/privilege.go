package webhooks

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
)

// DeviceHostPaths are the host paths through which a container reaches a node's GPUs
// without the device plugin: the device files (/dev, /dev/nvidia*), the NVIDIA driver's
// root as the GPU Operator installs it (/run/nvidia, /var/run/nvidia), the driver and
// tools of the container toolkit's hosts (/usr/local/nvidia), and the driver's libraries
// and binaries (names starting /usr/lib/x86_64-linux-gnu/libnvidia, .../libcuda,
// /usr/bin/nvidia). A hostPath volume at one of them, below one, or above one (/, /usr,
// /run, /var) is refused.
var DeviceHostPaths = []string{
	"/dev",
	"/run/nvidia",
	"/var/run/nvidia",
	"/usr/local/nvidia",
	"/usr/lib/x86_64-linux-gnu/libnvidia",
	"/usr/lib/x86_64-linux-gnu/libcuda",
	"/usr/bin/nvidia",
}

// DaemonSetControllerUser is kube-controller-manager's DaemonSet controller, which creates
// DaemonSets' pods.
const DaemonSetControllerUser = "system:serviceaccount:kube-system:daemon-set-controller"

// PrivilegeGuard refuses, in the namespaces the webhooks intercept (every namespace but
// kube-system, Tessera's own and webhook.excludeNamespaces), pods and pod templates
// (podTemplates) that step around the device plugin: a privileged container
// (securityContext.privileged), the SYS_ADMIN capability (capabilities.add SYS_ADMIN or
// ALL), a hostPath volume of DeviceHostPaths, and hostPID. Init and ephemeral containers
// count. A privileged container sees every device of the node; one with SYS_ADMIN gets
// GPUs from its own NVIDIA_VISIBLE_DEVICES; one with the host's /dev or driver files
// opens any GPU; one in the host's PID namespace reads other pods' environment and
// memory. DaemonSets and their pods are let through: they run node software (the GPU
// Operator, the node agent, monitoring), and tenants may not create them.
type PrivilegeGuard struct {
	// SystemNamespaces are never checked: kube-system and Tessera's namespace, which the
	// webhook configurations leave out anyway.
	SystemNamespaces []string
}

var _ Guard = (*PrivilegeGuard)(nil)

// Check implements Guard.
func (g *PrivilegeGuard) Check(req *admissionv1.AdmissionRequest) string {
	kind, op := req.Kind.Kind, req.Operation
	switch {
	case kind == KindDaemonSet, slices.Contains(g.SystemNamespaces, req.Namespace):
		return ""
	case kind == KindPod && op == admissionv1.Create,
		kind == KindPod && op == admissionv1.Update && req.SubResource == "ephemeralcontainers",
		kind != KindPod && podTemplates[kind] != nil && (op == admissionv1.Create || op == admissionv1.Update):
	default:
		return ""
	}
	if kind == KindPod && req.UserInfo.Username == DaemonSetControllerUser {
		return ""
	}
	// Almost no request asks for any of it: look before decoding.
	if !mentionsPrivilege(req.Object.Raw) {
		return ""
	}
	var obj map[string]any
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return fmt.Sprintf("cannot read the %s's pod spec: %v", kind, err)
	}
	var found []string
	for _, t := range templatesOf(kind, obj, false) {
		var spec corev1.PodSpec
		if err := remarshal(t.tmpl["spec"], &spec); err != nil {
			return fmt.Sprintf("cannot read the %s's pod spec at %s: %v", kind, t.specPath(), err)
		}
		found = append(found, privileges(&spec, t.specPath())...)
	}
	return strings.Join(found, "; ")
}

func mentionsPrivilege(raw []byte) bool {
	for _, s := range []string{`"privileged"`, `"add"`, `"hostPath"`, `"hostPID"`} {
		if strings.Contains(string(raw), s) {
			return true
		}
	}
	return false
}

const privilegeWhy = "it would reach the node's GPUs without Tessera's device plugin"

// privileges lists what the pod spec at path asks that PrivilegeGuard refuses.
func privileges(spec *corev1.PodSpec, path string) []string {
	var out []string
	if spec.HostPID {
		out = append(out, fmt.Sprintf("%s.hostPID: a pod in the host's PID namespace sees every other pod's processes, environment and GPU memory; remove hostPID", path))
	}
	for i, v := range spec.Volumes {
		if v.HostPath != nil && deviceHostPath(v.HostPath.Path) {
			out = append(out, fmt.Sprintf("%s.volumes[%d] (name %q) hostPath %q: %s (host paths refused: %s, and the directories above them); remove the volume and request GPUs",
				path, i, v.Name, v.HostPath.Path, privilegeWhy, strings.Join(DeviceHostPaths, ", ")))
		}
	}
	check := func(field string, i int, name string, sc *corev1.SecurityContext) {
		if sc == nil {
			return
		}
		where := fmt.Sprintf("%s.%s[%d] (name %q)", path, field, i, name)
		if sc.Privileged != nil && *sc.Privileged {
			out = append(out, fmt.Sprintf("%s securityContext.privileged: a privileged container sees every device of the node, its GPUs among them; remove it and request GPUs", where))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if n := strings.TrimPrefix(strings.ToUpper(string(c)), "CAP_"); n == "SYS_ADMIN" || n == "ALL" {
					out = append(out, fmt.Sprintf("%s securityContext.capabilities.add %s: with SYS_ADMIN a container can mount the node's devices, and the container runtime hands it the GPUs its own environment names; remove the capability", where, c))
				}
			}
		}
	}
	for i := range spec.InitContainers {
		check("initContainers", i, spec.InitContainers[i].Name, spec.InitContainers[i].SecurityContext)
	}
	for i := range spec.Containers {
		check("containers", i, spec.Containers[i].Name, spec.Containers[i].SecurityContext)
	}
	for i := range spec.EphemeralContainers {
		check("ephemeralContainers", i, spec.EphemeralContainers[i].Name, spec.EphemeralContainers[i].SecurityContext)
	}
	return out
}

// deviceHostPath: p is one of DeviceHostPaths, below one (a path, or but for /dev a
// name, that starts with it: /run/nvidia-persistenced, libnvidia-ml.so.1), or a
// directory above one.
func deviceHostPath(p string) bool {
	p = path.Clean("/" + p)
	if p == "/" {
		return true
	}
	for _, d := range DeviceHostPaths {
		if p == d || strings.HasPrefix(p, d+"/") || strings.HasPrefix(d, p+"/") || (d != "/dev" && strings.HasPrefix(p, d)) {
			return true
		}
	}
	return false
}
