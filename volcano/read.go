package volcano

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/tessera-gpu/tessera/internal/yamlerr"
)

// Read reads every object of a YAML or JSON file (name is the file in messages) for
// Convert. Empty documents are skipped and a v1 List (kubectl get -o yaml) gives its
// items; a file without objects, a document without apiVersion and kind, and a file
// over the YAML reader's limits (yamlerr.MaxFileBytes, yamlerr.MaxAliasNodes) are
// errors.
func Read(data []byte, name string) ([]*unstructured.Unstructured, error) {
	if err := yamlerr.Check(name, data); err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for i := 1; ; i++ {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i, yamlerr.Clean(err))
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: document %d: apiVersion and kind are required", name, i)
		}
		if u.GetKind() == "List" && u.GetAPIVersion() == "v1" {
			l, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("%s: document %d (List): %w", name, i, err)
			}
			for j := range l.Items {
				item := &l.Items[j]
				if item.GetKind() == "" || item.GetAPIVersion() == "" {
					return nil, fmt.Errorf("%s: document %d item %d: apiVersion and kind are required", name, i, j+1)
				}
				out = append(out, item)
			}
			continue
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no objects; give a file of Volcano Queues, PodGroups and Jobs", name)
	}
	return out, nil
}

// ReadFrom reads r, at most yamlerr.MaxFileBytes, as Read does.
func ReadFrom(r io.Reader, name string) ([]*unstructured.Unstructured, error) {
	data, err := io.ReadAll(io.LimitReader(r, yamlerr.MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > yamlerr.MaxFileBytes {
		return nil, yamlerr.TooLarge(name)
	}
	return Read(data, name)
}
