package cdi

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	specs "tags.cncf.io/container-device-interface/specs-go"
)

// ClaimKind is the CDI vendor/class of the devices the node agent defines for claims.
const ClaimKind = "tessera.dev/claim"

// DefaultDir is where container runtimes read CDI specs from by default.
const DefaultDir = "/var/run/cdi"

// Writer writes and removes spec files in Dir.
type Writer struct {
	// Dir is the CDI spec directory (DefaultDir when empty).
	Dir string
}

// deviceName is what CDI accepts as a device name.
var deviceName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.:-]*$`)

// QualifiedName is the CDI device ID of the claim device named name:
// tessera.dev/claim=<name>.
func QualifiedName(name string) string { return ClaimKind + "=" + name }

// Path is the spec file of the claim with the given UID.
func (w Writer) Path(claimUID string) string {
	dir := w.Dir
	if dir == "" {
		dir = DefaultDir
	}
	return filepath.Join(dir, "tessera.dev-claim_"+claimUID+".json")
}

// Write replaces the spec file of the claim with the given UID by one that defines
// devices. The file is written whole or not at all (a temporary file renamed), so a
// runtime never reads half a spec, and writing the same devices again changes nothing.
func (w Writer) Write(claimUID string, devices []specs.Device) error {
	if len(devices) == 0 {
		return errors.New("CDI spec without devices")
	}
	for _, d := range devices {
		if !deviceName.MatchString(d.Name) {
			return fmt.Errorf("CDI device name %q: want letters, digits and _.:- only, starting with a letter or digit", d.Name)
		}
	}
	spec := &specs.Spec{Kind: ClaimKind, Devices: devices}
	version, err := specs.MinimumRequiredVersion(spec)
	if err != nil {
		return fmt.Errorf("CDI spec version: %w", err)
	}
	spec.Version = version
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	path := w.Path(claimUID)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("CDI spec directory: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tessera-claim-*.tmp")
	if err != nil {
		return fmt.Errorf("write CDI spec: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write CDI spec %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write CDI spec %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write CDI spec %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write CDI spec %s: %w", path, err)
	}
	return nil
}

// Read returns the spec of the claim with the given UID.
func (w Writer) Read(claimUID string) (*specs.Spec, error) {
	data, err := os.ReadFile(w.Path(claimUID))
	if err != nil {
		return nil, err
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("CDI spec %s: %w", w.Path(claimUID), err)
	}
	return &spec, nil
}

// Remove deletes the spec file of the claim with the given UID; a missing file is no
// error.
func (w Writer) Remove(claimUID string) error {
	if err := os.Remove(w.Path(claimUID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove CDI spec: %w", err)
	}
	return nil
}
