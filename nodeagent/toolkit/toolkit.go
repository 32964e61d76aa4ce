package toolkit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// DefaultConfigPath is where the NVIDIA container runtime and its hook read their
// configuration.
const DefaultConfigPath = "/etc/nvidia-container-runtime/config.toml"

// Top-level keys of the toolkit's configuration that decide where a container's device
// list comes from.
const (
	// KeyEnvvarWhenUnprivileged: take the device list from NVIDIA_VISIBLE_DEVICES of a
	// container without CAP_SYS_ADMIN. The toolkit's default is true.
	KeyEnvvarWhenUnprivileged = "accept-nvidia-visible-devices-envvar-when-unprivileged"
	// KeyVolumeMounts: take the device list from mounts under
	// /var/run/nvidia-container-devices. The toolkit's default is false.
	KeyVolumeMounts = "accept-nvidia-visible-devices-as-volume-mounts"
)

// Config is what the node agent reads of the toolkit's configuration.
type Config struct {
	// EnvvarWhenUnprivileged: an unprivileged container's own NVIDIA_VISIBLE_DEVICES
	// chooses its GPUs.
	EnvvarWhenUnprivileged bool
	// VolumeMounts: device lists are read from volume mounts.
	VolumeMounts bool
}

// Fix says how to stop the toolkit from taking device lists from the environment.
const Fix = "set " + KeyEnvvarWhenUnprivileged + " = false (and " + KeyVolumeMounts + " = true for the volume-mounts strategy) " +
	"at the top of the file and restart the container runtime; with the NVIDIA GPU Operator, set the toolkit's environment " +
	"ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false (and ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS=true) " +
	"and enable CDI (cdi.enabled=true)"

// Parse reads the top-level boolean keys of a toolkit configuration (TOML), with the
// toolkit's defaults for the keys it does not set. Top-level keys come before the first
// table header; a key of ours written in a table is not the toolkit's setting and is not
// read either. A line that names one of the keys but is not `key = true|false` is an
// error, and so is a key set twice: the check fails closed.
func Parse(data []byte) (Config, error) {
	c := Config{EnvvarWhenUnprivileged: true}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			break
		}
		for _, key := range []string{KeyEnvvarWhenUnprivileged, KeyVolumeMounts} {
			if !strings.Contains(line, key) || strings.HasPrefix(line, "#") {
				continue
			}
			m := boolKey.FindStringSubmatch(line)
			if m == nil || m[2] != key {
				return c, fmt.Errorf("line %d: cannot read %q: want %s = true or false", n, line, key)
			}
			if seen[key] {
				return c, fmt.Errorf("line %d: %s is set twice", n, key)
			}
			seen[key] = true
			v := m[3] == "true"
			if key == KeyEnvvarWhenUnprivileged {
				c.EnvvarWhenUnprivileged = v
			} else {
				c.VolumeMounts = v
			}
		}
	}
	return c, sc.Err()
}

// boolKey is a top-level `key = true|false`, the key bare or quoted, a comment allowed.
var boolKey = regexp.MustCompile(`^(["']?)([A-Za-z0-9_-]+)(?:["']?)\s*=\s*(true|false)\s*(?:#.*)?$`)

// Read reads the toolkit configuration at path.
func Read(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	c, err := Parse(data)
	if err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Check returns nil when the toolkit configured at path gives unprivileged containers
// their GPUs only as devices (CDI, volume mounts), never from their environment; else
// an error that names the file, the key and the fix. A missing file is an error: the
// toolkit's defaults take the environment.
func Check(path string) error {
	c, err := Read(path)
	switch {
	case os.IsNotExist(err):
		return fmt.Errorf("NVIDIA container toolkit configuration %s not found: without it the toolkit takes device lists from "+
			"NVIDIA_VISIBLE_DEVICES of unprivileged containers (%s defaults to true), so any pod could pick any GPU; "+
			"mount the host's /etc/nvidia-container-runtime (the chart does) and %s", path, KeyEnvvarWhenUnprivileged, Fix)
	case err != nil:
		return fmt.Errorf("cannot read the NVIDIA container toolkit configuration: %w; %s", err, Fix)
	case c.EnvvarWhenUnprivileged:
		return fmt.Errorf("the NVIDIA container toolkit takes device lists from NVIDIA_VISIBLE_DEVICES of unprivileged containers "+
			"(%s: %s is not false; it defaults to true), so any pod could pick any GPU whatever the device plugin hands out: %s",
			path, KeyEnvvarWhenUnprivileged, Fix)
	}
	return nil
}
