package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// UpdateVariable, set to 1, makes Check write the files instead of comparing them.
const UpdateVariable = "TESSERA_UPDATE_REFERENCE"

// Check fails t when the file at path differs from got, naming the file and the fix;
// with UpdateVariable=1 it writes got there instead.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if os.Getenv(UpdateVariable) == "1" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want, err := os.ReadFile(path); err != nil || !bytes.Equal(want, got) {
		t.Errorf("%s is stale (%v): run make generate", path, err)
	}
}
