package kubeclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// blackHole listens on a local port, accepts every connection and never answers: an
// API server that hangs. It returns the URL to reach it.
func blackHole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // read nothing, write nothing
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
	return "http://" + l.Addr().String()
}

// writeKubeconfig writes a kubeconfig of the cluster at server and returns its path.
func writeKubeconfig(t *testing.T, server string) string {
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

// noCluster leaves the process without $KUBECONFIG and in-cluster configuration.
// (~/.kube/config is read from the home directory at start; a developer's own would
// still be found.)
func noCluster(t *testing.T) {
	if _, err := os.Stat(clientcmd.RecommendedHomeFile); err == nil {
		t.Skipf("%s exists", clientcmd.RecommendedHomeFile)
	}
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
}

func TestLoad(t *testing.T) {
	noCluster(t)
	if _, err := Load(""); !errors.Is(err, ErrNoKubeconfig) {
		t.Errorf("no configuration: got %v, want %v", err, ErrNoKubeconfig)
	} else if strings.Contains(err.Error(), "KUBERNETES_MASTER") {
		t.Errorf("no configuration: %v", err)
	}
	kc := writeKubeconfig(t, "https://example.invalid:6443")
	t.Setenv("KUBECONFIG", kc)
	cfg, err := Load("")
	if err != nil || cfg.Host != "https://example.invalid:6443" {
		t.Fatalf("$KUBECONFIG: %v, %+v", err, cfg)
	}
	other := writeKubeconfig(t, "https://other.invalid:6443")
	if cfg, err := Load(other); err != nil || cfg.Host != "https://other.invalid:6443" {
		t.Fatalf("a path before $KUBECONFIG: %v, %+v", err, cfg)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "nosuch")); err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("a missing file: got %v", err)
	}
	if err := (Options{RequestTimeout: -time.Second}).Validate(); err == nil || !strings.Contains(err.Error(), "--request-timeout") {
		t.Errorf("negative timeout: %v", err)
	}
}

// A request to a server that never answers fails with a TimeoutError in about the
// timeout, a list and a watch alike.
func TestRequestTimeout(t *testing.T) {
	o := Options{Kubeconfig: writeKubeconfig(t, blackHole(t)), RequestTimeout: 300 * time.Millisecond}
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	for name, call := range map[string]func() error{
		"list": func() error {
			_, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
			return err
		},
		"watch": func() error {
			_, err := cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{})
			return err
		},
		"discovery": func() error {
			_, err := cs.Discovery().ServerGroups()
			return err
		},
	} {
		start := time.Now()
		err := call()
		var te *TimeoutError
		if !errors.As(err, &te) && !strings.Contains(fmt.Sprint(err), "did not answer within 300ms") {
			t.Errorf("%s: got %v, want a TimeoutError", name, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %s", name, d)
		}
	}
}

// A watch that streams outlives the timeout; a body that stops half-way does not.
func TestRequestTimeoutStreams(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for i := 0; i < 4; i++ {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			fmt.Fprintln(w, "event")
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	WithRequestTimeout(cfg, 250*time.Millisecond)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	read := func(url string) (string, error) {
		resp, err := hc.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if body, err := read(srv.URL + "/api/v1/pods?watch=true"); err != nil || strings.Count(body, "event") != 4 {
		t.Errorf("watch: %q, %v; want every event", body, err)
	}
	_, err = read(srv.URL + "/api/v1/pods")
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Errorf("a list still streaming after the timeout: got %v, want a TimeoutError", err)
	}
}
