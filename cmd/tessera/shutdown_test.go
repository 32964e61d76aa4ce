package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/tessera-gpu/tessera/internal/cli"
	"github.com/tessera-gpu/tessera/internal/kubeclient/kubeclienttest"
)

// The binary the tests run, built once (tesseraBinary).
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// tesseraBinary builds ./cmd/tessera the way a user would: `go build` without build
// tags, with cgo off.
func tesseraBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "tessera-bin"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "tessera")
		build := exec.Command("go", "build", "-o", binPath, "./cmd/tessera")
		build.Dir = filepath.Join("..", "..")
		build.Env = append(os.Environ(), "GOFLAGS="+withoutTags(os.Getenv("GOFLAGS")), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("CGO_ENABLED=0 go build ./cmd/tessera: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// apiServer is a fake API server for the shutdown tests. A black hole accepts
// connections and never answers; otherwise it answers discovery (every kind of
// newScheme) and leaves every other request hanging, so that a component gets as far
// as its manager and its informers, which then wait forever.
type apiServer struct {
	url      string
	hole     *kubeclienttest.BlackHole // the black hole, if it is one
	requests atomic.Int64
	waiting  atomic.Int64
}

// Requests is how many requests reached s so far (connections, for a black hole).
func (s *apiServer) Requests() int64 {
	if s.hole != nil {
		return s.hole.Conns()
	}
	return s.requests.Load()
}

// Waiting is how many requests s left hanging so far (connections, for a black hole).
func (s *apiServer) Waiting() int64 {
	if s.hole != nil {
		return s.hole.Conns()
	}
	return s.waiting.Load()
}

func newAPIServer(t *testing.T, blackHole bool) *apiServer {
	t.Helper()
	if blackHole {
		hole := kubeclienttest.NewBlackHole(t)
		return &apiServer{url: hole.URL, hole: hole}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &apiServer{url: "http://" + l.Addr().String()}
	hang := make(chan struct{})
	discovery := discoveryDocuments(t)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if doc, ok := discovery[r.URL.Path]; ok {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(doc)
			return
		}
		s.waiting.Add(1)
		select { // a list, a watch, a Lease: never answered
		case <-hang:
		case <-r.Context().Done():
		}
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		close(hang)
		srv.Close()
	})
	return s
}

// discoveryDocuments are /api, /apis and a resource list per group version, for every
// kind newScheme knows.
func discoveryDocuments(t *testing.T) map[string][]byte {
	t.Helper()
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	clusterScoped := map[string]bool{"Node": true, "Namespace": true, "PriorityClass": true, "Queue": true, "GPUNode": true,
		"ScaleDownPolicy": true, "AdmissionPolicy": true, "PersistentVolume": true, "StorageClass": true, "CSINode": true, "CSIDriver": true}
	lists := map[string]*metav1.APIResourceList{}
	groups := map[string][]string{}
	for gvk := range scheme.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") || gvk.Version == "__internal" || strings.HasSuffix(gvk.Kind, "Options") || strings.HasSuffix(gvk.Kind, "Event") && gvk.Group == "" && gvk.Kind != "Event" {
			continue
		}
		gv := gvk.GroupVersion().String()
		l := lists[gv]
		if l == nil {
			l = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
			lists[gv] = l
			if gvk.Group != "" {
				groups[gvk.Group] = append(groups[gvk.Group], gvk.Version)
			}
		}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: plural.Resource, Kind: gvk.Kind, Namespaced: !clusterScoped[gvk.Kind],
			Verbs: metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"}})
	}
	docs := map[string][]byte{}
	add := func(path string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		docs[path] = b
	}
	add("/api", metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: "127.0.0.1"}}})
	groupList := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for g, versions := range groups {
		group := metav1.APIGroup{Name: g}
		for _, v := range versions {
			group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{GroupVersion: g + "/" + v, Version: v})
		}
		group.PreferredVersion = group.Versions[0]
		groupList.Groups = append(groupList.Groups, group)
	}
	add("/apis", groupList)
	for gv, l := range lists {
		if strings.Contains(gv, "/") {
			add("/apis/"+gv, l)
		} else {
			add("/api/"+gv, l)
		}
	}
	return docs
}

// Every command that talks to a cluster stops within a few seconds of SIGTERM or
// SIGINT, whatever the API server does: one that never answers, one that answers
// discovery only (the component gets to its manager, whose informers and Lease then
// wait). The request timeout stays at its default, far longer than the bound.
func TestSignalStopsEveryCommand(t *testing.T) {
	bin := tesseraBinary(t)
	serving := []string{"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0"}
	commands := map[string][]string{
		"scheduler":               append([]string{"scheduler", "--leader-election-namespace=tessera-system"}, serving...),
		"webhook":                 append([]string{"webhook", "--cert-manager", fmt.Sprint("--port=", freePort(t))}, serving...),
		"autoscaler":              append([]string{"autoscaler", "--leader-election-namespace=tessera-system"}, serving...),
		"explain":                 {"explain", "queue", "default"},
		"autoscaler plan":         {"autoscaler", "plan"},
		"simulate --from-cluster": {"simulate", "--from-cluster"},
	}
	daemons := map[string]bool{"scheduler": true, "webhook": true, "autoscaler": true}
	for _, blackHole := range []bool{true, false} {
		server := "black hole"
		if !blackHole {
			server = "discovery only"
		}
		for name, args := range commands {
			for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
				t.Run(fmt.Sprintf("%s/%s/%s", name, server, sig), func(t *testing.T) {
					t.Parallel()
					api := newAPIServer(t, blackHole)
					cmd := exec.Command(bin, append(args, "--kubeconfig", kubeclienttest.WriteKubeconfig(t, api.url))...)
					stderr, done := kubeclienttest.Start(t, cmd)
					// Signal once the command waits for the API server (past discovery,
					// when that answers), and a moment later.
					deadline := time.Now().Add(20 * time.Second)
					for api.Waiting() == 0 {
						select {
						case err := <-done:
							t.Fatalf("exited before the signal: %v\n%s", err, stderr.String())
						case <-time.After(20 * time.Millisecond):
						}
						if time.Now().After(deadline) {
							_ = cmd.Process.Kill()
							t.Fatalf("no request waits on the API server after 20s\n%s", stderr.String())
						}
					}
					select {
					case err := <-done:
						t.Fatalf("exited before the signal: %v\n%s", err, stderr.String())
					case <-time.After(500 * time.Millisecond):
					}
					start := time.Now()
					if err := cmd.Process.Signal(sig); err != nil {
						t.Fatal(err)
					}
					select {
					case err := <-done:
						if d := time.Since(start); d > cli.ShutdownGrace+2*time.Second {
							t.Errorf("stopped %s after %s", d, sig)
						}
						var exit *exec.ExitError
						switch {
						case err != nil && !errors.As(err, &exit):
							t.Errorf("wait: %v", err)
						case daemons[name] && err != nil:
							t.Errorf("a component stopped by %s exits 0, got %v:\n%s", sig, err, tail(stderr.String(), 6))
						}
						t.Logf("stopped %s after %s: %v; log ends:\n%s", time.Since(start).Round(time.Millisecond), sig, err, tail(stderr.String(), 6))
					case <-time.After(10 * time.Second):
						_ = cmd.Process.Kill()
						t.Fatalf("still running 10s after %s\n%s", sig, stderr.String())
					}
				})
			}
		}
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Against an API server that never answers, every command that talks to a cluster
// fails by itself within about its --request-timeout, naming the timeout: one-shot
// commands and daemons alike (exit code 1: it started and failed).
func TestRequestTimeoutEveryCommand(t *testing.T) {
	bin := tesseraBinary(t)
	serving := []string{"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0"}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "kustomization.yaml"), "resources: [ns.yaml]\n")
	writeFile(t, filepath.Join(dir, "ns.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n")
	for name, args := range map[string][]string{
		"scheduler":                     append([]string{"scheduler", "--leader-election-namespace=tessera-system"}, serving...),
		"webhook":                       append([]string{"webhook", "--cert-manager", fmt.Sprint("--port=", freePort(t))}, serving...),
		"autoscaler":                    append([]string{"autoscaler", "--leader-election-namespace=tessera-system"}, serving...),
		"explain":                       {"explain", "pod", "default/p"},
		"autoscaler plan":               {"autoscaler", "plan"},
		"simulate --from-cluster":       {"simulate", "--from-cluster"},
		"gitops preview --from-cluster": {"gitops", "preview", "--base", dir, "--head", dir, "--from-cluster"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			api := newAPIServer(t, true)
			cmd := exec.Command(bin, append(args, "--kubeconfig", kubeclienttest.WriteKubeconfig(t, api.url), "--request-timeout=1s")...)
			start := time.Now()
			stderr, done := kubeclienttest.Start(t, cmd)
			select {
			case err := <-done:
				var exit *exec.ExitError
				if !errors.As(err, &exit) {
					t.Fatalf("got %v, want a failure:\n%s", err, stderr.String())
				}
				if want := "the API server did not answer within 1s"; !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, tail(stderr.String(), 6))
				}
				if code := exit.ExitCode(); code != cli.ExitFailure && name != "gitops preview --from-cluster" {
					t.Errorf("exit code %d, want %d", code, cli.ExitFailure)
				}
				t.Logf("failed after %s", time.Since(start).Round(time.Millisecond))
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("still running after 10s with --request-timeout=1s\n%s", tail(stderr.String(), 6))
			}
		})
	}
}

// stuckManager is a manager whose informers never sync: its Start never returns, as
// controller-runtime's does not while it waits for them.
type stuckManager struct {
	manager.Manager
}

func (stuckManager) Start(context.Context) error { select {} }
func (stuckManager) GetCache() crcache.Cache     { return stuckCache{} }

type stuckCache struct{ crcache.Cache }

func (stuckCache) WaitForCacheSync(ctx context.Context) bool {
	<-ctx.Done()
	return false
}

// A manager whose informers never sync fails after the sync timeout, or stops at once
// when its context ends first.
func TestStartManagerUnsynced(t *testing.T) {
	start := time.Now()
	err := startManager(context.Background(), stuckManager{}, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "the informers did not sync within 200ms") {
		t.Errorf("sync timeout: got %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if err := startManager(ctx, stuckManager{}, time.Hour); err != nil {
		t.Errorf("stopped before the sync: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}
