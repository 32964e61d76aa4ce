package e2e

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Job is a plain batch/v1 Job as a user writes it, with no Tessera fields: pods pods
// asking each for gpus whole GPUs (nvidia.com/gpu) or, with memoryMiB, one slice of a
// GPU (tessera.dev/gpu-memory); kwok completes each pod runtime after it starts (0:
// never).
func Job(namespace, name string, pods int32, gpus, memoryMiB int64, runtime time.Duration) *batchv1.Job {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	if memoryMiB > 0 {
		res[tesserav1.ResourceGPUMemory] = *resource.NewQuantity(memoryMiB, resource.DecimalSI)
	} else {
		res[tesserav1.ResourceNvidiaGPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	annotations := map[string]string{}
	if runtime > 0 {
		annotations[FakeRuntime] = runtime.String()
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: batchv1.JobSpec{
			Parallelism:  ptr.To(pods),
			Completions:  ptr.To(pods),
			BackoffLimit: ptr.To(int32(20)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name: "train", Image: "registry.example.com/train:1.0",
						Resources: corev1.ResourceRequirements{Requests: res, Limits: res},
					}},
				},
			},
		},
	}
}

// JobPods lists the pods of a Job.
func JobPods(ctx context.Context, c client.Client, job *batchv1.Job) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := c.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name})
	return pods.Items, err
}

// Bound counts pods with a node that have not finished or been deleted.
func Bound(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
			n++
		}
	}
	return n
}

// JobDone returns nil once the Job has succeeded.
func JobDone(ctx context.Context, c client.Client, job *batchv1.Job) error {
	var j batchv1.Job
	if err := c.Get(ctx, client.ObjectKeyFromObject(job), &j); err != nil {
		return err
	}
	for _, cond := range j.Status.Conditions {
		if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
			return nil
		}
		if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue {
			return fmt.Errorf("job %s failed: %s", job.Name, cond.Message)
		}
	}
	return fmt.Errorf("job %s: %d succeeded, %d active", job.Name, j.Status.Succeeded, j.Status.Active)
}
