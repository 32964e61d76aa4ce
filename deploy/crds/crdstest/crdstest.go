// Package crdstest holds the objects the CRDs must reject, shared by the offline
// validation tests and the integration tests against a real API server.
package crdstest

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Invalid is one object the CRDs reject.
type Invalid struct {
	Name string
	// Doc is the object's YAML.
	Doc []byte
	// Want are the words the rejection must contain.
	Want []string
}

// InvalidObjects reads testdata/invalid.yaml.
func InvalidObjects(t testing.TB) []Invalid {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "testdata", "invalid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []Invalid
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		a := meta.Metadata.Annotations
		if a == nil {
			continue // the leading comment
		}
		out = append(out, Invalid{Name: a["test.tessera.dev/case"], Doc: doc, Want: strings.Split(a["test.tessera.dev/rejected-for"], " | ")})
	}
}
