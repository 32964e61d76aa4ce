package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of every Tessera kind.
var GroupVersion = schema.GroupVersion{Group: "tessera.dev", Version: "v1alpha1"}

var (
	// SchemeBuilder registers the Tessera kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the Tessera kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Queue{}, &QueueList{},
		&PodGroup{}, &PodGroupList{},
		&GPUNode{}, &GPUNodeList{},
		&ScaleDownPolicy{}, &ScaleDownPolicyList{},
		&AdmissionPolicy{}, &AdmissionPolicyList{},
		&GPUProfile{}, &GPUProfileList{},
	)
	metav1AddToGroupVersion(s)
	return nil
}
