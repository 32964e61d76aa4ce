package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/test/testenv"
)

func TestWebhookCertFlags(t *testing.T) {
	ok := webhookFlags{namespace: "tessera-system", certValidity: 90 * 24 * time.Hour, certRotateBefore: 30 * 24 * time.Hour}
	if err := ok.validateCerts(); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]webhookFlags{
		"--namespace":          {certValidity: time.Hour, certRotateBefore: time.Minute},
		"--cert-rotate-before": {namespace: "n", certValidity: time.Hour, certRotateBefore: time.Hour},
		"--cert-validity":      {namespace: "n", certValidity: 11 * 365 * 24 * time.Hour, certRotateBefore: time.Hour},
	} {
		if err := f.validateCerts(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%+v: error %v, want one naming %s", f, err, name)
		}
		f.certManager = true
		if err := f.validateCerts(); err != nil {
			t.Errorf("with --cert-manager: %v", err)
		}
	}
}

const (
	certNamespace = "tessera-system"
	certDNSName   = "tessera-webhook.tessera-system.svc"
)

// The self-managed certificate, end to end against a real API server, as the webhook's
// ServiceAccount with the RBAC of the deployed manifests (the kustomize base, rendered
// from the Helm chart): the certificate is generated into the Secret, the server starts
// only once the Secret is mounted, the CA is injected into every webhook of both
// configurations, a second replica reuses the certificate, a configuration re-applied
// without caBundle gets it back, a corrupted Secret is regenerated, and the serving
// certificate is re-signed before it expires.
func TestWebhookCertificate(t *testing.T) {
	e := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t, 4*time.Minute)
	ctrl.SetLogger(klog.NewKlogr())
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: certNamespace}}); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(root, "deploy", "kustomize", "base", "webhook")
	if err := e.Apply(ctx, filepath.Join(base, "rbac.yaml"), filepath.Join(base, "secret.yaml"), filepath.Join(base, "webhooks.yaml")); err != nil {
		t.Fatal(err)
	}
	asWebhook := rest.CopyConfig(e.Config)
	asWebhook.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + certNamespace + ":tessera-webhook",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + certNamespace, "system:authenticated"},
	}
	flags := func(certDir string) webhookFlags {
		return webhookFlags{
			port: freePort(t), certDir: certDir, namespace: certNamespace, serviceName: "tessera-webhook",
			secretName: "tessera-webhook-tls", mutatingConfig: "tessera", validatingConfig: "tessera",
			certValidity: 90 * 24 * time.Hour, certRotateBefore: 30 * 24 * time.Hour,
			serving: controller.Serving{MetricsAddr: "0", ProbeAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t))}, policyTimeout: time.Second,
		}
	}

	// Replica A: the whole webhook.
	fa := flags(t.TempDir())
	ctxA, stopA := context.WithCancel(ctx)
	doneA := make(chan error, 1)
	go func() { doneA <- serveWebhook(ctxA, asWebhook, fa) }()
	data := waitSecret(t, ctx, e.Client, "a certificate in the Secret", func(d map[string][]byte) bool { return len(d["tls.crt"]) > 0 })
	// Not mounted yet: not serving, not ready.
	if err := readyz(fa); err == nil {
		t.Fatal("ready before the certificate is in --cert-dir")
	}
	if _, err := serving(fa, nil); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("webhook port answers before the certificate is in --cert-dir: %v", err)
	}
	testenv.MountSecret(ctxA, e.Client, client.ObjectKey{Namespace: certNamespace, Name: "tessera-webhook-tls"}, fa.certDir)
	poll(t, ctx, "replica A ready", func() error { return readyz(fa) })
	bundle := injectedBundle(t, ctx, e.Client)
	if !bytes.Equal(bundle, data["ca.crt"]) {
		t.Fatal("injected caBundle is not the Secret's CA")
	}
	leaf, err := serving(fa, bundle)
	if err != nil {
		t.Fatalf("served certificate does not verify against the injected caBundle: %v", err)
	}
	if !bytes.Equal(leaf.Raw, certDER(t, data["tls.crt"])) {
		t.Fatal("served certificate is not the Secret's")
	}
	for _, name := range []string{"tessera-webhook", "tessera-webhook.tessera-system", certDNSName + ".cluster.local"} {
		if err := leaf.VerifyHostname(name); err != nil {
			t.Error(err)
		}
	}

	// Replica B (its rotator only; one webhook server per process) reuses the certificate.
	fb := flags(t.TempDir())
	readyB, stopB := startRotator(t, ctx, asWebhook, fb, "cert-rotator-b", nil)
	testenv.MountSecret(ctx, e.Client, client.ObjectKey{Namespace: certNamespace, Name: "tessera-webhook-tls"}, fb.certDir)
	select {
	case <-readyB:
	case <-ctx.Done():
		t.Fatal("replica B never ready")
	}
	if now := secretData(t, ctx, e.Client); !bytes.Equal(now["tls.crt"], data["tls.crt"]) || !bytes.Equal(now["ca.crt"], data["ca.crt"]) {
		t.Fatal("second replica replaced the stored certificate")
	}

	// A configuration re-applied without caBundle (a GitOps sync) gets it back.
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "tessera"}, &v); err != nil {
		t.Fatal(err)
	}
	for i := range v.Webhooks {
		v.Webhooks[i].ClientConfig.CABundle = nil
	}
	if err := e.Client.Update(ctx, &v); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "caBundle re-injected", func() error {
		if b := bundleOf(ctx, e.Client); !bytes.Equal(b, bundle) {
			return fmt.Errorf("caBundle %.40q", b)
		}
		return nil
	})

	// A corrupted Secret is regenerated: the serving certificate is re-signed by the same
	// CA (the caBundle stays), and the running server picks it up from the mount.
	var s corev1.Secret
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: certNamespace, Name: "tessera-webhook-tls"}, &s); err != nil {
		t.Fatal(err)
	}
	s.Data["tls.key"] = []byte("garbage")
	if err := e.Client.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	fixed := waitSecret(t, ctx, e.Client, "the corrupted Secret regenerated", func(d map[string][]byte) bool {
		_, err := tls.X509KeyPair(d["tls.crt"], d["tls.key"])
		return err == nil && !bytes.Equal(d["tls.crt"], data["tls.crt"])
	})
	if !bytes.Equal(fixed["ca.crt"], data["ca.crt"]) || !bytes.Equal(injectedBundle(t, ctx, e.Client), bundle) {
		t.Fatal("regenerating the serving certificate replaced the CA")
	}
	poll(t, ctx, "replica A serving the regenerated certificate", func() error {
		leaf, err := serving(fa, bundle)
		if err == nil && !bytes.Equal(leaf.Raw, certDER(t, secretData(t, ctx, e.Client)["tls.crt"])) {
			err = fmt.Errorf("still serving %s", leaf.NotBefore)
		}
		return err
	})
	// Both replicas stop before the Secret is emptied for the rotation below.
	stopA()
	stopB()
	if err := <-doneA; err != nil {
		t.Fatalf("replica A: %v", err)
	}

	// Rotation: with a serving certificate valid 40s, re-signed when less than 30s are
	// left, a new one replaces it well before it expires, signed by the same CA. (The CA
	// itself lives 10 years: rotations never change the caBundle, so a replica still
	// serving the previous certificate until the kubelet refreshes its mount stays
	// trusted. Unlike a CA rotation, which would need the old CA kept in the bundle.)
	s = corev1.Secret{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: certNamespace, Name: "tessera-webhook-tls"}, &s); err != nil {
		t.Fatal(err)
	}
	s.Data = nil
	if err := e.Client.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	fc := flags(t.TempDir())
	fc.certValidity, fc.certRotateBefore = 40*time.Second, 30*time.Second
	if err := fc.validate(); err != nil {
		t.Fatal(err)
	}
	_, _ = startRotator(t, ctx, asWebhook, fc, "cert-rotator-c", func(cr *rotator.CertRotator) { cr.RotationCheckFrequency = time.Second })
	first := waitSecret(t, ctx, e.Client, "a short-lived certificate", func(d map[string][]byte) bool { return len(d["tls.crt"]) > 0 })
	firstLeaf := parseCert(t, first["tls.crt"])
	deadline, cancel := context.WithDeadline(ctx, firstLeaf.NotAfter)
	defer cancel()
	second := waitSecret(t, deadline, e.Client, "the certificate re-signed before it expires", func(d map[string][]byte) bool {
		return len(d["tls.crt"]) > 0 && !bytes.Equal(d["tls.crt"], first["tls.crt"])
	})
	secondLeaf := parseCert(t, second["tls.crt"])
	if !secondLeaf.NotAfter.After(firstLeaf.NotAfter) || !bytes.Equal(second["ca.crt"], first["ca.crt"]) {
		t.Fatalf("rotated certificate expires %s (was %s), CA changed: %v", secondLeaf.NotAfter, firstLeaf.NotAfter, !bytes.Equal(second["ca.crt"], first["ca.crt"]))
	}
	poll(t, ctx, "the CA injected", func() error {
		if !bytes.Equal(bundleOf(ctx, e.Client), first["ca.crt"]) {
			return fmt.Errorf("caBundle is not the Secret's CA")
		}
		return nil
	})
	for _, c := range []*x509.Certificate{firstLeaf, secondLeaf} {
		if err := verify(c, first["ca.crt"], time.Now()); err != nil {
			t.Errorf("certificate from %s: %v", c.NotBefore, err)
		}
	}
}

// startRotator runs the webhook's certificate rotator alone in a manager of its own
// until stop is called or the test ends; controllerName must be unique in the process.
// It returns IsReady and stop, which returns once the manager has stopped.
func startRotator(t *testing.T, ctx context.Context, cfg *rest.Config, f webhookFlags, controllerName string, tune func(*rotator.CertRotator)) (ready chan struct{}, stop func()) {
	t.Helper()
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	ready = make(chan struct{})
	cr := certRotator(f, ready)
	cr.ControllerName = controllerName
	if tune != nil {
		tune(cr)
	}
	if err := rotator.AddRotator(mgr, cr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", controllerName, err)
		}
	})
	t.Cleanup(stop)
	return ready, stop
}

// poll calls check until it succeeds, failing the test when ctx ends first.
func poll(t *testing.T, ctx context.Context, what string, check func() error) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, err)
		case <-tick.C:
		}
	}
}

func waitSecret(t *testing.T, ctx context.Context, c client.Client, what string, ok func(map[string][]byte) bool) map[string][]byte {
	t.Helper()
	var data map[string][]byte
	poll(t, ctx, what, func() error {
		if data = secretData(t, ctx, c); !ok(data) {
			return fmt.Errorf("Secret holds %d keys", len(data))
		}
		return nil
	})
	return data
}

func secretData(t *testing.T, ctx context.Context, c client.Client) map[string][]byte {
	t.Helper()
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: certNamespace, Name: "tessera-webhook-tls"}, &s); err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	return s.Data
}

// bundleOf returns the caBundle every webhook of both configurations has, or nil when
// they differ.
func bundleOf(ctx context.Context, c client.Client) []byte {
	var m admissionregistrationv1.MutatingWebhookConfiguration
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	if c.Get(ctx, client.ObjectKey{Name: "tessera"}, &m) != nil || c.Get(ctx, client.ObjectKey{Name: "tessera"}, &v) != nil {
		return nil
	}
	var all [][]byte
	for _, w := range m.Webhooks {
		all = append(all, w.ClientConfig.CABundle)
	}
	for _, w := range v.Webhooks {
		all = append(all, w.ClientConfig.CABundle)
	}
	for _, b := range all {
		if len(b) == 0 || !bytes.Equal(b, all[0]) {
			return nil
		}
	}
	return all[0]
}

func injectedBundle(t *testing.T, ctx context.Context, c client.Client) []byte {
	t.Helper()
	b := bundleOf(ctx, c)
	if b == nil {
		t.Fatal("the webhooks of the two configurations do not all carry the same caBundle")
	}
	return b
}

func readyz(f webhookFlags) error {
	resp, err := http.Get("http://" + f.serving.ProbeAddr + "/readyz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s", resp.Status)
	}
	return nil
}

// serving returns the certificate the webhook server presents, verified against
// bundle for the Service's name (not verified when bundle is nil).
func serving(f webhookFlags, bundle []byte) (*x509.Certificate, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", f.port),
		&tls.Config{RootCAs: pool, ServerName: certDNSName, InsecureSkipVerify: bundle == nil})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

func verify(c *x509.Certificate, caPEM []byte, at time.Time) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	_, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: certDNSName, CurrentTime: at})
	return err
}

func certDER(t *testing.T, p []byte) []byte {
	t.Helper()
	b, _ := pem.Decode(p)
	if b == nil {
		t.Fatal("no PEM certificate")
	}
	return b.Bytes
}

func parseCert(t *testing.T, p []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(certDER(t, p))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
