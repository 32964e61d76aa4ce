package rightsize

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Labels that name the workload of pods whose owner's name is made up per run.
const (
	labelJobSet          = "jobset.sigs.k8s.io/jobset-name"
	labelReplicatedJob   = "jobset.sigs.k8s.io/replicatedjob-name"
	labelLeaderWorkerSet = "leaderworkerset.sigs.k8s.io/name"
	labelRayCluster      = "ray.io/cluster"
	labelRayGroup        = "ray.io/group"
	labelRayOriginKind   = "ray.io/originated-from-crd"
	labelRayOriginName   = "ray.io/originated-from-cr-name"
	labelPodTemplateHash = "pod-template-hash"
	// cronJobSuffixDigits is the least length of the scheduled-time suffix (minutes
	// since the epoch) the CronJob controller gives its Jobs' names.
	cronJobSuffixDigits = 8
)

// WorkloadKey names the workload whose runs share a GPU-memory history, from a pod's
// labels, owner references and name, so that reruns of the same work find it:
//
//   - the tessera.dev/workload label, verbatim, when set;
//   - JobSet/<name>/<replicated job>, from the JobSet labels (each replicated job is
//     its own role: a driver and its workers use GPU memory differently);
//   - LeaderWorkerSet/<name>, from the LeaderWorkerSet label;
//   - <kind>/<name>/<group> of the RayJob or RayService that made a Ray cluster, or
//     RayCluster/<name>/<group>, from the KubeRay labels;
//   - the controlling owner's Kind/Name, with the suffixes made up per run removed: a
//     CronJob's Job <name>-<8+ digits> is CronJob/<name>; a Deployment's ReplicaSet
//     <name>-<pod-template-hash> is Deployment/<name>;
//   - Pod/<name> for a pod no controller owns.
func WorkloadKey(labels map[string]string, owners []metav1.OwnerReference, podName string) string {
	if w := labels[v1alpha1.LabelWorkload]; w != "" {
		return w
	}
	if js := labels[labelJobSet]; js != "" {
		return join("JobSet", js, labels[labelReplicatedJob])
	}
	if lws := labels[labelLeaderWorkerSet]; lws != "" {
		return join("LeaderWorkerSet", lws)
	}
	if rc := labels[labelRayCluster]; rc != "" {
		if kind, name := labels[labelRayOriginKind], labels[labelRayOriginName]; kind != "" && kind != "RayCluster" && name != "" {
			return join(kind, name, labels[labelRayGroup])
		}
		return join("RayCluster", rc, labels[labelRayGroup])
	}
	owner := metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: owners})
	if owner == nil {
		return join("Pod", podName)
	}
	switch owner.Kind {
	case "Job":
		if name, ok := cutDigits(owner.Name); ok {
			return join("CronJob", name)
		}
	case "ReplicaSet":
		if h := labels[labelPodTemplateHash]; h != "" {
			if name, ok := strings.CutSuffix(owner.Name, "-"+h); ok && name != "" {
				return join("Deployment", name)
			}
		}
	}
	return join(owner.Kind, owner.Name)
}

// cutDigits removes a CronJob's scheduled-time suffix: "-" and at least
// cronJobSuffixDigits digits.
func cutDigits(name string) (string, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || len(name)-i-1 < cronJobSuffixDigits {
		return name, false
	}
	for _, c := range name[i+1:] {
		if c < '0' || c > '9' {
			return name, false
		}
	}
	return name[:i], true
}

// join joins the non-empty parts with "/".
func join(parts ...string) string {
	kept := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "/")
}

// maxProfileName bounds a GPUProfile's name, hash suffix included.
const maxProfileName = 63

// ProfileNames are the names the GPUProfile of the workload key may have: name, the
// key lower-cased with "/" as "." and any other character a DNS name cannot hold as
// "-" (cut and hash-suffixed when longer than 63 characters); and fallback, name with
// a hash of the key, used when another workload's key already took name. The profile
// of key is the one of the two whose spec.workload is key.
func ProfileNames(key string) (name, fallback string) {
	sum := sha256.Sum256([]byte(key))
	suffix := "-" + hex.EncodeToString(sum[:4])
	var b strings.Builder
	for _, c := range strings.ToLower(key) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.':
			b.WriteRune(c)
		case c == '/':
			b.WriteByte('.')
		default:
			b.WriteByte('-')
		}
	}
	name = trimName(b.String())
	if name == "" {
		name = "workload"
	}
	if len(name) > maxProfileName {
		name = trimName(name[:maxProfileName-len(suffix)]) + suffix
		return name, name
	}
	return name, trimName(name[:min(len(name), maxProfileName-len(suffix))]) + suffix
}

// trimName trims what a DNS name cannot start or end with.
func trimName(s string) string { return strings.Trim(s, "-.") }
