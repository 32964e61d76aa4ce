package toolkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The configuration nvidia-ctk writes, with the keys the GPU Operator sets to lock it down.
const lockedDown = `accept-nvidia-visible-devices-as-volume-mounts = true
accept-nvidia-visible-devices-envvar-when-unprivileged = false
disable-require = false
supported-driver-capabilities = "compat32,compute,display,graphics,ngx,utility,video"

[nvidia-container-cli]
  environment = []
  ldconfig = "@/sbin/ldconfig.real"
  load-kmods = true

[nvidia-container-runtime]
  log-level = "info"
  mode = "cdi"
`

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name       string
		data       string
		env, mount bool
		err        string
	}{
		{name: "locked down", data: lockedDown, env: false, mount: true},
		{name: "empty: the toolkit's defaults", data: "", env: true},
		{name: "the default file, keys commented out", data: "#accept-nvidia-visible-devices-envvar-when-unprivileged = true\n#accept-nvidia-visible-devices-as-volume-mounts = false\n", env: true},
		{name: "explicitly true", data: "accept-nvidia-visible-devices-envvar-when-unprivileged = true\n", env: true},
		{name: "quoted key, comment", data: "\"accept-nvidia-visible-devices-envvar-when-unprivileged\" = false # locked\n", env: false},
		{name: "in a table, where the toolkit does not read it", data: "[nvidia-container-runtime]\naccept-nvidia-visible-devices-envvar-when-unprivileged = false\n", env: true},
		{name: "not a boolean", data: "accept-nvidia-visible-devices-envvar-when-unprivileged = \"false\"\n", err: "cannot read"},
		{name: "set twice", data: "accept-nvidia-visible-devices-envvar-when-unprivileged = false\naccept-nvidia-visible-devices-envvar-when-unprivileged = true\n", err: "set twice"},
		{name: "a longer key", data: "accept-nvidia-visible-devices-envvar-when-unprivileged-x = false\n", err: "cannot read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.data))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.EnvvarWhenUnprivileged != tc.env || c.VolumeMounts != tc.mount {
				t.Fatalf("Parse = %+v, want envvar %v, volume mounts %v", c, tc.env, tc.mount)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := Check(write("ok.toml", lockedDown)); err != nil {
		t.Fatalf("locked-down configuration refused: %v", err)
	}
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"default", write("default.toml", "disable-require = false\n"), []string{"default.toml", KeyEnvvarWhenUnprivileged, "is not false",
			"ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false", "cdi.enabled=true"}},
		{"missing", filepath.Join(dir, "none.toml"), []string{"none.toml not found", "mount the host's /etc/nvidia-container-runtime"}},
		{"unreadable", write("bad.toml", "accept-nvidia-visible-devices-envvar-when-unprivileged = no\n"), []string{"bad.toml: line 1: cannot read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.path)
			if err == nil {
				t.Fatal("Check passed")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check error %q does not say %q", err, w)
				}
			}
		})
	}
}
