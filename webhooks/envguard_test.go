package webhooks

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

func envPod(mod func(*corev1.PodSpec)) *corev1.Pod {
	p := guardPod(nil)
	p.Spec.Containers[0].Name = "train"
	mod(&p.Spec)
	return p
}

func withEnv(names ...string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		for _, n := range names {
			s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: n, Value: "all"})
		}
	}
}

func TestEnvGuard(t *testing.T) {
	template := func(mod func(*corev1.PodSpec)) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: envPod(mod).Spec}
	}
	job := &batchv1.Job{Spec: batchv1.JobSpec{Template: template(withEnv("NVIDIA_VISIBLE_DEVICES"))}}
	cron := &batchv1.CronJob{Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: job.Spec}}}
	deploy := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: template(withEnv("TESSERA_GPU_MEMORY_LIMIT_MIB"))}}
	jobSet := map[string]any{"spec": map[string]any{"replicatedJobs": []any{
		map[string]any{"name": "ok", "template": map[string]any{"spec": map[string]any{"template": template(withEnv("HOME"))}}},
		map[string]any{"name": "workers", "template": map[string]any{"spec": map[string]any{"template": template(withEnv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"))}}},
	}}}
	rayCluster := map[string]any{"spec": map[string]any{
		"headGroupSpec":    map[string]any{"template": template(withEnv("HOME"))},
		"workerGroupSpecs": []any{map[string]any{"template": template(withEnv("NVIDIA_VISIBLE_DEVICES"))}},
	}}
	pyTorchJob := map[string]any{"spec": map[string]any{"pytorchReplicaSpecs": map[string]any{
		"Master": map[string]any{"template": template(withEnv("HOME"))},
		"Worker": map[string]any{"template": template(withEnv("TESSERA_GPU_MEMORY_LIMIT_MIB"))},
	}}}
	lws := map[string]any{"spec": map[string]any{"leaderWorkerTemplate": map[string]any{
		"leaderTemplate": template(withEnv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT")), "workerTemplate": template(withEnv("HOME"))}}}
	ephemeral := envPod(func(s *corev1.PodSpec) {
		s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Env: []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}}}}
	})
	ephemeralReq := guardRequest(t, KindPod, admissionv1.Update, guardTenant, ephemeral, guardPod(nil))
	ephemeralReq.SubResource = "ephemeralcontainers"
	envFrom := func(prefix string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: prefix,
				ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
		}
	}
	create := func(kind string, obj any) *admissionv1.AdmissionRequest {
		return guardRequest(t, kind, admissionv1.Create, guardTenant, obj, nil)
	}
	cases := []struct {
		name string
		req  *admissionv1.AdmissionRequest
		want []string // substrings of the denial; nil: allowed
	}{
		{"pod visible devices", create(KindPod, envPod(withEnv("NVIDIA_VISIBLE_DEVICES"))),
			[]string{`spec.containers[0] (name "train") env NVIDIA_VISIBLE_DEVICES: GPU delivery env is set by Tessera's device plugin; remove it`}},
		{"pod MPS limit and Tessera's limit", create(KindPod, envPod(withEnv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "TESSERA_GPU_MEMORY_LIMIT_MIB"))),
			[]string{"env CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "; spec.containers[0] (name \"train\") env TESSERA_GPU_MEMORY_LIMIT_MIB"}},
		{"init container", create(KindPod, envPod(func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "setup", Env: []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "GPU-1"}}}}
		})), []string{`spec.initContainers[0] (name "setup") env NVIDIA_VISIBLE_DEVICES`}},
		{"envFrom with a delivery prefix", create(KindPod, envPod(envFrom("NVIDIA_"))),
			[]string{`spec.containers[0] (name "train") envFrom[0] prefix "NVIDIA_"`, "NVIDIA_*, CUDA_MPS_*, TESSERA_*", "use another prefix"}},
		{"envFrom with the start of one", create(KindPod, envPod(envFrom("CUDA"))), []string{`prefix "CUDA"`}},
		{"envFrom with another prefix", create(KindPod, envPod(envFrom("APP_"))), nil},
		{"envFrom without a prefix", create(KindPod, envPod(envFrom(""))), nil},
		{"other env", create(KindPod, envPod(withEnv("CUDA_VISIBLE_DEVICES_ORDER", "NVIDIA", "HOME"))), nil},
		{"job template", create(KindJob, job), []string{`spec.template.spec.containers[0] (name "train") env NVIDIA_VISIBLE_DEVICES`}},
		{"cron job template", create(KindCronJob, cron), []string{`spec.jobTemplate.spec.template.spec.containers[0] (name "train")`}},
		{"deployment template", create(KindDeployment, deploy), []string{`spec.template.spec.containers[0] (name "train") env TESSERA_GPU_MEMORY_LIMIT_MIB`}},
		{"deployment update", guardRequest(t, KindDeployment, admissionv1.Update, guardTenant, deploy, deploy), []string{"env TESSERA_GPU_MEMORY_LIMIT_MIB"}},
		{"job set template", create(KindJobSet, jobSet),
			[]string{`spec.replicatedJobs[1].template.spec.template.spec.containers[0] (name "train") env CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`}},
		{"ray worker group template", create(KindRayCluster, rayCluster),
			[]string{`spec.workerGroupSpecs[0].template.spec.containers[0] (name "train") env NVIDIA_VISIBLE_DEVICES`}},
		{"pytorch worker template", create(KindPyTorchJob, pyTorchJob),
			[]string{`spec.pytorchReplicaSpecs.Worker.template.spec.containers[0] (name "train") env TESSERA_GPU_MEMORY_LIMIT_MIB`}},
		{"leader template update", guardRequest(t, KindLeaderWorkerSet, admissionv1.Update, guardTenant, lws, lws),
			[]string{`spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0] (name "train") env CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`}},
		{"ephemeral container", ephemeralReq, []string{`spec.ephemeralContainers[0] (name "debug") env NVIDIA_VISIBLE_DEVICES`}},
		// Container env cannot change on a pod update; the create was checked.
		{"pod update", guardRequest(t, KindPod, admissionv1.Update, guardTenant, envPod(withEnv("NVIDIA_VISIBLE_DEVICES")), nil), nil},
		{"by the scheduler too", guardRequest(t, KindPod, admissionv1.Create, guardScheduler, envPod(withEnv("NVIDIA_VISIBLE_DEVICES")), nil),
			[]string{"NVIDIA_VISIBLE_DEVICES"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkGuard(t, EnvGuard{}, c.req, c.want) })
	}
}
