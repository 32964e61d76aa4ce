package webhooks

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// ChargeKeys are the labels and annotations (Tessera reads each from either) that decide
// which queue a pod, PodGroup, Job or custom workload is charged to, which gang it
// belongs to and how large that gang is.
var ChargeKeys = []string{
	tesserav1.LabelQueue, tesserav1.LabelPodGroup, tesserav1.AnnotationMinAvailable,
	tesserav1.VolcanoQueueName, tesserav1.VolcanoGroupName, tesserav1.VolcanoGroupMinMember,
	tesserav1.KueueQueueName, tesserav1.KueuePodGroupName, tesserav1.KueuePodGroupTotalCount,
	tesserav1.CoschedulingPodGroup,
}

// ImmutableGuard keeps the queue and gang of a Pod, a PodGroup, a Job and a custom
// workload (CustomWorkloads) as they were admitted: an UPDATE may not add, change or
// remove a key of ChargeKeys, change a Pod's or PodGroup's metadata.ownerReferences (a
// Job's pods are its gang), or change a PodGroup's spec.queue or spec.minMember. The
// policies decide on a workload when it is created; without this, an update would move a
// pending or running pod into another team's queue, a queue that does not exist, out of
// its gang, or shrink the gang its pods are scheduled as, unchecked.
//
// The scheduler needs no exemption: it places pods with Bindings and writes PodGroups
// through their status, neither of which is an update of the object. The cluster's own
// controllers may change ownerReferences (clusterController).
type ImmutableGuard struct{}

var _ Guard = ImmutableGuard{}

// Check implements Guard.
func (ImmutableGuard) Check(req *admissionv1.AdmissionRequest) string {
	kind := req.Kind.Kind
	if req.Operation != admissionv1.Update || req.SubResource != "" || !freezesCharge(kind) {
		return ""
	}
	var now, before chargeMeta
	if err := json.Unmarshal(req.Object.Raw, &now); err != nil {
		return fmt.Sprintf("cannot read the %s: %v", kind, err)
	}
	if err := json.Unmarshal(req.OldObject.Raw, &before); err != nil {
		return fmt.Sprintf("cannot read the %s as it was: %v", kind, err)
	}
	var changed []string
	for _, key := range ChargeKeys {
		for _, m := range []struct {
			field     string
			now, then map[string]string
		}{{"labels", now.Metadata.Labels, before.Metadata.Labels}, {"annotations", now.Metadata.Annotations, before.Metadata.Annotations}} {
			// An empty value is read as no value.
			if v, old := m.now[key], m.then[key]; v != old {
				changed = append(changed, fmt.Sprintf("metadata.%s[%s] (from %q to %q)", m.field, key, old, v))
			}
		}
	}
	ownedGang := kind == KindPod || kind == KindPodGroup
	if ownedGang && !reflect.DeepEqual(now.Metadata.OwnerReferences, before.Metadata.OwnerReferences) && !clusterController(req.UserInfo) {
		changed = append(changed, "metadata.ownerReferences")
	}
	if kind == KindPodGroup && now.Spec.Queue != before.Spec.Queue {
		changed = append(changed, fmt.Sprintf("spec.queue (from %q to %q)", before.Spec.Queue, now.Spec.Queue))
	}
	if kind == KindPodGroup && now.Spec.MinMember != before.Spec.MinMember {
		changed = append(changed, fmt.Sprintf("spec.minMember (from %d to %d)", before.Spec.MinMember, now.Spec.MinMember))
	}
	if len(changed) == 0 {
		return ""
	}
	return fmt.Sprintf("%s cannot change after the %s is created: its queue and gang are decided and checked then; delete the %s and create it again with the new value",
		strings.Join(changed, ", "), kind, kind)
}

// freezesCharge: the ImmutableGuard keeps the ChargeKeys of the kind.
func freezesCharge(kind string) bool {
	return kind == KindPod || kind == KindPodGroup || kind == KindJob || isCustomWorkload[kind]
}

// chargeMeta is the part of a Pod or PodGroup the ImmutableGuard compares.
type chargeMeta struct {
	Metadata struct {
		Labels          map[string]string       `json:"labels"`
		Annotations     map[string]string       `json:"annotations"`
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		Queue     string `json:"queue"`
		MinMember int32  `json:"minMember"`
	} `json:"spec"`
}

// clusterController: the request comes from kube-controller-manager, as itself or as one
// of its controllers' ServiceAccounts in kube-system (which no tenant can act as). Its
// garbage collector removes the ownerReferences of the dependents it orphans and the
// dangling ones, and the Job, ReplicaSet, StatefulSet and DaemonSet controllers adopt and
// release pods by adding and removing their controller reference.
func clusterController(u authenticationv1.UserInfo) bool {
	return u.Username == "system:kube-controller-manager" || slices.Contains(u.Groups, "system:serviceaccounts:kube-system")
}
