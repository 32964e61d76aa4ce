package cgroup

import (
	"os"
	"path/filepath"
	"testing"
)

const (
	uid = "6f3ad2c4-1b2e-4c5d-9e8f-0a1b2c3d4e5f"
	cid = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          Owner
		ok            bool
	}{
		{"cgroup v2 systemd containerd",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod6f3ad2c4_1b2e_4c5d_9e8f_0a1b2c3d4e5f.slice/cri-containerd-" + cid + ".scope\n",
			Owner{uid, cid}, true},
		{"cgroup v1 cgroupfs docker",
			"12:pids:/kubepods/besteffort/pod" + uid + "/" + cid + "\n11:memory:/kubepods/besteffort/pod" + uid + "/" + cid + "\n",
			Owner{uid, cid}, true},
		{"cgroup v2 guaranteed crio",
			"0::/kubepods.slice/kubepods-pod6f3ad2c4_1b2e_4c5d_9e8f_0a1b2c3d4e5f.slice/crio-" + cid + ".scope\n",
			Owner{uid, cid}, true},
		{"pod cgroup without container", "0::/kubepods/burstable/pod" + uid + "\n", Owner{PodUID: uid}, true},
		{"host process", "0::/system.slice/sshd.service\n", Owner{}, false},
		{"empty", "", Owner{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Parse([]byte(tc.content))
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Parse = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestResolverReadsProcRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "4242"), 0o755); err != nil {
		t.Fatal(err)
	}
	content := "0::/kubepods/burstable/pod" + uid + "/" + cid + "\n"
	if err := os.WriteFile(filepath.Join(root, "4242", "cgroup"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Resolver{ProcRoot: root}
	o, ok, err := r.Owner(4242)
	if err != nil || !ok || o.PodUID != uid || o.ContainerID != cid {
		t.Fatalf("Owner(4242) = %+v, %v, %v", o, ok, err)
	}
	if _, _, err := r.Owner(1); err == nil {
		t.Fatal("Owner of a missing pid: no error")
	}
}
