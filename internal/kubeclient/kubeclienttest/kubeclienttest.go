package kubeclienttest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// BlackHole is an API server that accepts every connection and never answers: reads
// nothing, writes nothing.
type BlackHole struct {
	// URL is where it listens, http://127.0.0.1:PORT.
	URL   string
	conns atomic.Int64
}

// NewBlackHole starts a BlackHole on a local port; it stops, closing every connection,
// when t ends.
func NewBlackHole(t testing.TB) *BlackHole {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &BlackHole{URL: "http://" + l.Addr().String()}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b.conns.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return b
}

// FreeAddr is a local address (127.0.0.1:PORT) that was free a moment ago, for a
// command's metrics or health endpoint.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Conns is how many connections b has accepted so far.
func (b *BlackHole) Conns() int64 { return b.conns.Load() }

// WriteKubeconfig writes a kubeconfig of the cluster at server (a token user, its
// only context) in a directory of t's and returns its path.
func WriteKubeconfig(t testing.TB, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// NoCluster leaves the process, for the rest of t, without $KUBECONFIG and without
// in-cluster configuration. ~/.kube/config is found by its path at start, so t is
// skipped where one exists.
func NoCluster(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(clientcmd.RecommendedHomeFile); err == nil {
		t.Skipf("%s exists", clientcmd.RecommendedHomeFile)
	}
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
}

// Start starts cmd, collecting its standard error in stderr; done receives what Wait
// returns once cmd exits.
func Start(t testing.TB, cmd *exec.Cmd) (stderr *bytes.Buffer, done <-chan error) {
	t.Helper()
	stderr = &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return stderr, exited
}
