package chart

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/test/testenv"
)

// chartCRDs reads the chart's crds/, each as an unstructured object.
func chartCRDs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s/crds: %v", chartDir, err)
	}
	var crds []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		crds = append(crds, u)
	}
	return crds
}

// The upgrade path of the chart README: Helm installs crds/ once and never upgrades them,
// so an upgrade applies the new chart's crds/ first with
// `kubectl apply --server-side --force-conflicts -f crds/`. Here, against a real API
// server: the CRDs as an older chart's `helm install` created them (the Queue without
// spec.namespaceSelector and spec.allowedPriorityClasses, field manager helm), objects
// stored under them, then the chart's crds/ applied server-side as kubectl does. Without
// --force-conflicts the apply conflicts with the fields helm set (so the README says to
// force); with it the CRDs take the new schema, applying again changes nothing, and the
// stored objects still read, validate and take the new fields.
func TestCRDUpgradeServerSideApply(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t, 3*time.Minute)
	c := env.Client
	crds := chartCRDs(t)

	// The older chart's CRDs, written as `helm install` writes them (a plain write, field
	// manager helm) over the ones the environment installed (the current ones, written
	// the same way by another manager).
	const queueCRD = "queues.tessera.dev"
	newFields := []string{"namespaceSelector", "allowedPriorityClasses"}
	for _, crd := range crds {
		old := crd.DeepCopy()
		if old.GetName() == queueCRD {
			versions, _, _ := unstructured.NestedSlice(old.Object, "spec", "versions")
			for _, v := range versions {
				for _, f := range newFields {
					unstructured.RemoveNestedField(v.(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties", f)
				}
			}
			if err := unstructured.SetNestedSlice(old.Object, versions, "spec", "versions"); err != nil {
				t.Fatal(err)
			}
		}
		live := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: old.GetName()}, live); err != nil {
			t.Fatal(err)
		}
		old.SetResourceVersion(live.ResourceVersion)
		if err := c.Update(ctx, old, client.FieldOwner("helm")); err != nil {
			t.Fatalf("install the older %s: %v", old.GetName(), err)
		}
	}
	waitEstablished(t, ctx, c, crds)

	// Objects stored under the older CRDs. The Queue's newer field is pruned: unknown there.
	queue := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "tessera.dev", Version: "v1alpha1", Kind: "Queue"})
		return u
	}
	q := queue()
	q.SetName("team-a")
	q.Object["spec"] = map[string]any{"weight": int64(2), "capability": map[string]any{"tessera.dev/gpu": "8"},
		"allowedPriorityClasses": []any{"batch-normal"}}
	waitFor(t, ctx, "the older Queue CRD serves (prunes the newer field)", func() (bool, error) {
		probe := q.DeepCopy()
		if err := c.Create(ctx, probe, client.DryRunAll); err != nil {
			return false, err
		}
		_, found, _ := unstructured.NestedFieldNoCopy(probe.Object, "spec", "allowedPriorityClasses")
		return !found, nil
	})
	if err := c.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(schema.GroupVersionKind{Group: "tessera.dev", Version: "v1alpha1", Kind: "PodGroup"})
	pg.SetNamespace("team-a")
	pg.SetName("gang")
	pg.Object["spec"] = map[string]any{"minMember": int64(4), "queue": "team-a"}
	if err := c.Create(ctx, pg); err != nil {
		t.Fatal(err)
	}
	got := queue()
	if err := c.Get(ctx, client.ObjectKey{Name: "team-a"}, got); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "allowedPriorityClasses"); found {
		t.Fatal("the older Queue CRD kept spec.allowedPriorityClasses: the test does not start from an older schema")
	}

	// kubectl apply --server-side -f crds/ (field manager kubectl), without and with
	// --force-conflicts.
	apply := func(crd *unstructured.Unstructured, force bool) error {
		opts := []client.ApplyOption{client.FieldOwner("kubectl")}
		if force {
			opts = append(opts, client.ForceOwnership)
		}
		return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(crd.DeepCopy()), opts...)
	}
	for _, crd := range crds {
		err := apply(crd, false)
		if crd.GetName() == queueCRD && !apierrors.IsConflict(err) {
			t.Errorf("apply %s without --force-conflicts over helm's fields: %v, want a conflict (the README says to force)", crd.GetName(), err)
		}
		if crd.GetName() != queueCRD && err != nil && !apierrors.IsConflict(err) {
			t.Errorf("apply %s: %v", crd.GetName(), err)
		}
	}
	for round := 1; round <= 2; round++ {
		for _, crd := range crds {
			if err := apply(crd, true); err != nil {
				t.Fatalf("apply --server-side --force-conflicts %s (round %d): %v", crd.GetName(), round, err)
			}
		}
	}
	// Once kubectl owns the fields, the next upgrade's apply needs no force.
	for _, crd := range crds {
		if err := apply(crd, false); err != nil {
			t.Errorf("apply %s again, without --force-conflicts: %v", crd.GetName(), err)
		}
	}
	waitEstablished(t, ctx, c, crds)
	for _, crd := range crds {
		live := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crd.GetName()}, live); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(live.Status.StoredVersions, []string{"v1alpha1"}) {
			t.Errorf("%s: storedVersions %v, want [v1alpha1]", live.Name, live.Status.StoredVersions)
		}
		if live.Name == queueCRD {
			props := live.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties
			for _, f := range newFields {
				if _, ok := props[f]; !ok {
					t.Errorf("after the upgrade the Queue CRD has no spec.%s", f)
				}
			}
		}
	}

	// The stored objects: still there, valid under the new schema (an unchanged update
	// passes validation), and they take the new field.
	waitFor(t, ctx, "the upgraded Queue takes spec.allowedPriorityClasses", func() (bool, error) {
		got := queue()
		if err := c.Get(ctx, client.ObjectKey{Name: "team-a"}, got); err != nil {
			return false, err
		}
		if w, _, _ := unstructured.NestedInt64(got.Object, "spec", "weight"); w != 2 {
			t.Fatalf("the stored Queue changed: %v", got.Object["spec"])
		}
		if err := unstructured.SetNestedStringSlice(got.Object, []string{"batch-normal"}, "spec", "allowedPriorityClasses"); err != nil {
			return false, err
		}
		if err := c.Update(ctx, got); err != nil {
			return false, err // a conflict: read again
		}
		_ = c.Get(ctx, client.ObjectKey{Name: "team-a"}, got)
		l, _, _ := unstructured.NestedStringSlice(got.Object, "spec", "allowedPriorityClasses")
		return slices.Equal(l, []string{"batch-normal"}), nil
	})
	storedPG := pg.DeepCopy()
	if err := c.Get(ctx, client.ObjectKeyFromObject(pg), storedPG); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, storedPG); err != nil {
		t.Errorf("the stored PodGroup does not validate under the new CRD: %v", err)
	}
	if m, _, _ := unstructured.NestedInt64(storedPG.Object, "spec", "minMember"); m != 4 {
		t.Errorf("the stored PodGroup changed: %v", storedPG.Object["spec"])
	}
}

func waitEstablished(t *testing.T, ctx context.Context, c client.Client, crds []*unstructured.Unstructured) {
	t.Helper()
	for _, crd := range crds {
		waitFor(t, ctx, "CRD "+crd.GetName()+" established", func() (bool, error) {
			live := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: crd.GetName()}, live); err != nil {
				return false, err
			}
			for _, cond := range live.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
	}
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting until %s: %v (last error: %v)", what, err, last)
	}
}
