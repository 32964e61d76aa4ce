package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// BuildTags are the build tags the tessera binary needs (the Makefile's GOFLAGS):
// kustomize's API without Go plugin support, see cmd/tessera/buildtags.go.
const BuildTags = "kustomize_disable_go_plugin_support"

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
// path.
func BuildTesseraTo(dir string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "tessera")
	cmd := exec.Command("go", "build", "-tags", BuildTags, "-o", bin, "./cmd/tessera")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build tessera: %w", err)
	}
	return bin, nil
}
