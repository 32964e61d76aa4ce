package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig for the environment's admin user to path, for
// processes (Tessera's own binary) that talk to this API server as they would to a
// cluster.
func (e *Env) WriteKubeconfig(path string) error {
	c := e.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["testenv"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: c.CertData, ClientKeyData: c.KeyData, Token: c.BearerToken,
	}
	kc.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "admin"}
	kc.CurrentContext = "testenv"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// BuildTessera builds the tessera binary from this checkout into a temporary
// directory and returns its path.
func BuildTessera(tb testing.TB) string {
	tb.Helper()
	bin, err := BuildTesseraTo(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// BuildTesseraTo builds the tessera binary from this checkout into dir and returns its
// path: static, with cgo off, as `make build` and the image build it.
func BuildTesseraTo(dir string, tags ...string) (string, error) {
	return buildTo(dir, "tessera", false, tags)
}

// BuildNodeAgentTo builds the tessera-node-agent binary from this checkout into dir and
// returns its path: with cgo, as `make build` and the image build it (go-nvml).
func BuildNodeAgentTo(dir string, tags ...string) (string, error) {
	return buildTo(dir, "tessera-node-agent", true, tags)
}

// buildTo runs `go build -o dir/name ./cmd/name` in the repository, with build tags.
func buildTo(dir, name string, cgo bool, tags []string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-tags", strings.Join(tags, ","), "-o", bin, "./cmd/"+name)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if cgo {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if os.Getenv("CGO_CFLAGS") == "" {
			// go-nvml's bindings call NVML functions the header marks deprecated (see the Makefile).
			cmd.Env = append(cmd.Env, "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
		}
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build %s: %w", name, err)
	}
	return bin, nil
}
