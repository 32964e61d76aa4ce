package dra

import (
	"context"
	"encoding/json"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// Served reports whether the API server serves ResourceSlices in resource.k8s.io/v1,
// the API the driver publishes and reads claims in. It gives up when ctx ends.
func Served(ctx context.Context, d discovery.DiscoveryInterface) (bool, error) {
	gv := resourceapi.SchemeGroupVersion
	var list metav1.APIResourceList
	raw, err := d.RESTClient().Get().AbsPath("/apis", gv.Group, gv.Version).Do(ctx).Raw()
	if err == nil {
		err = json.Unmarshal(raw, &list)
	}
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discover %s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == "resourceslices" {
			return true, nil
		}
	}
	return false, nil
}
