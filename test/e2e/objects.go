package e2e

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// poolLabel selects the MachineDeployment's Machines.
const poolLabel = "e2e.tessera.dev/pool"

// clusterObjects are the Cluster API objects of a self-hosted cluster: the Cluster has
// no infrastructure or control-plane reference (Cluster API then treats both as
// provisioned), its kubeconfig Secret points at this API server, and one
// MachineDeployment of FakeMachines with min and max size for autoscalers.
func clusterObjects(kubeconfig []byte, replicas int32, minSize int) []client.Object {
	template := &unstructured.Unstructured{}
	template.SetGroupVersionKind(fakeTemplateGVK)
	template.SetNamespace(ClusterNamespace)
	template.SetName(DeploymentName)
	_ = unstructured.SetNestedMap(template.Object, map[string]any{"spec": map[string]any{}}, "spec", "template")
	selector := map[string]string{poolLabel: DeploymentName, clusterv1.ClusterNameLabel: ClusterName}
	return []client.Object{
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ClusterNamespace, Name: ClusterName + "-kubeconfig", Labels: map[string]string{clusterv1.ClusterNameLabel: ClusterName}},
			Type:       clusterv1.ClusterSecretType,
			Data:       map[string][]byte{"value": kubeconfig},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ClusterNamespace, Name: "fake-bootstrap"},
			Data:       map[string][]byte{"value": []byte("#!/bin/sh\n"), "format": []byte("cloud-config")},
		},
		&clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ClusterNamespace, Name: ClusterName}, Spec: clusterv1.ClusterSpec{Paused: ptr.To(false)}},
		template,
		&clusterv1.MachineDeployment{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ClusterNamespace, Name: DeploymentName,
				Annotations: map[string]string{
					clusterv1.AutoscalerMinSizeAnnotation: strconv.Itoa(minSize),
					clusterv1.AutoscalerMaxSizeAnnotation: strconv.Itoa(int(replicas)),
				},
			},
			Spec: clusterv1.MachineDeploymentSpec{
				ClusterName: ClusterName,
				Replicas:    ptr.To(replicas),
				Selector:    metav1.LabelSelector{MatchLabels: selector},
				Rollout: clusterv1.MachineDeploymentRolloutSpec{Strategy: clusterv1.MachineDeploymentRolloutStrategy{
					Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
					RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
						MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
					},
				}},
				Template: clusterv1.MachineTemplateSpec{
					ObjectMeta: clusterv1.ObjectMeta{Labels: selector},
					Spec: clusterv1.MachineSpec{
						ClusterName: ClusterName,
						Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To("fake-bootstrap")},
						InfrastructureRef: clusterv1.ContractVersionedObjectReference{
							APIGroup: fakeTemplateGVK.Group, Kind: fakeTemplateGVK.Kind, Name: DeploymentName,
						},
					},
				},
			},
		},
	}
}
