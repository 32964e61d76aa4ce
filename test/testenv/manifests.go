package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DecodeFiles reads the objects of YAML manifest files (several documents per file),
// strictly: an unknown field is an error.
func (e *Env) DecodeFiles(files ...string) ([]client.Object, error) {
	decoder := serializer.NewCodecFactory(e.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var objs []client.Object
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		r := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var raw runtime.RawExtension
			if err := r.Decode(&raw); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(bytes.TrimSpace(raw.Raw)) == 0 {
				continue
			}
			obj, _, err := decoder.Decode(raw.Raw, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			objs = append(objs, obj.(client.Object))
		}
	}
	return objs, nil
}

// Apply creates the objects of the manifest files; objects that exist already are left
// as they are.
func (e *Env) Apply(ctx context.Context, files ...string) error {
	objs, err := e.DecodeFiles(files...)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := e.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}
