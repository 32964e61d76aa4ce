package kubeclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tessera-gpu/tessera/internal/kubeclient/kubeclienttest"
)

func TestLoad(t *testing.T) {
	kubeclienttest.NoCluster(t)
	if _, err := Load(""); !errors.Is(err, ErrNoKubeconfig) {
		t.Errorf("no configuration: got %v, want %v", err, ErrNoKubeconfig)
	} else if strings.Contains(err.Error(), "KUBERNETES_MASTER") {
		t.Errorf("no configuration: %v", err)
	}
	kc := kubeclienttest.WriteKubeconfig(t, "https://example.invalid:6443")
	t.Setenv("KUBECONFIG", kc)
	cfg, err := Load("")
	if err != nil || cfg.Host != "https://example.invalid:6443" {
		t.Fatalf("$KUBECONFIG: %v, %+v", err, cfg)
	}
	other := kubeclienttest.WriteKubeconfig(t, "https://other.invalid:6443")
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
	o := Options{Kubeconfig: kubeclienttest.WriteKubeconfig(t, kubeclienttest.NewBlackHole(t).URL), RequestTimeout: 300 * time.Millisecond}
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
