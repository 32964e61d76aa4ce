package tlscert_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tessera-gpu/tessera/test/testenv"
	"github.com/tessera-gpu/tessera/webhooks/tlscert"
)

func webhookConfigs() (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	cc := admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: "tessera-system", Name: "tessera-webhook", Path: ptr.To("/mutate"),
	}}
	none := admissionregistrationv1.SideEffectClassNone
	m := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "tessera"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mutate.tessera.dev", ClientConfig: cc, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "tessera"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "validate.tessera.dev", ClientConfig: cc, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
			{Name: "validate2.tessera.dev", ClientConfig: cc, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
		},
	}
	return m, v
}

func leaf(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bundleCAs parses the caBundle of every webhook in both configurations, checking that
// they agree.
func bundleCAs(t *testing.T, c client.Client) []*x509.Certificate {
	t.Helper()
	ctx := testenv.Context(t, 10*time.Second)
	var m admissionregistrationv1.MutatingWebhookConfiguration
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: "tessera"}, &m); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "tessera"}, &v); err != nil {
		t.Fatal(err)
	}
	b := m.Webhooks[0].ClientConfig.CABundle
	for _, w := range v.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, b) {
			t.Fatalf("webhook %s has a different caBundle", w.Name)
		}
	}
	var out []*x509.Certificate
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		ca, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ca)
	}
	return out
}

func verifies(cert *x509.Certificate, cas []*x509.Certificate, dns string, at time.Time) error {
	pool := x509.NewCertPool()
	for _, ca := range cas {
		pool.AddCert(ca)
	}
	_, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: dns, CurrentTime: at})
	return err
}

func TestGenerateInjectRotate(t *testing.T) {
	e := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t, 60*time.Second)
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tessera-system"}}); err != nil {
		t.Fatal(err)
	}
	m, v := webhookConfigs()
	if err := e.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, v); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	dir := t.TempDir()
	mgr := &tlscert.Manager{
		Client: e.Client, Namespace: "tessera-system", SecretName: "tessera-webhook-tls", ServiceName: "tessera-webhook",
		MutatingConfig: "tessera", ValidatingConfig: "tessera", CertDir: dir,
		Validity: 90 * 24 * time.Hour, RotateBefore: 30 * 24 * time.Hour, Clock: clk,
	}
	const dns = "tessera-webhook.tessera-system.svc"

	rotated, err := mgr.Ensure(ctx)
	if err != nil || !rotated {
		t.Fatalf("first Ensure: rotated=%v err=%v, want a new certificate", rotated, err)
	}
	first := leaf(t, dir)
	if err := verifies(first, bundleCAs(t, e.Client), dns, clk.Now()); err != nil {
		t.Fatalf("served certificate does not verify against the injected caBundle: %v", err)
	}
	var secret corev1.Secret
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: "tessera-system", Name: "tessera-webhook-tls"}, &secret); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(secret.Data["tls.crt"], mustRead(t, filepath.Join(dir, "tls.crt"))) {
		t.Fatal("files and Secret disagree")
	}

	// Well before expiry nothing changes, even on another replica (empty cert dir).
	clk.SetTime(start.Add(59 * 24 * time.Hour))
	other := *mgr
	other.CertDir = t.TempDir()
	if rotated, err := other.Ensure(ctx); err != nil || rotated {
		t.Fatalf("Ensure at day 59: rotated=%v err=%v, want no rotation", rotated, err)
	}
	if leaf(t, other.CertDir).SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Fatal("second replica did not reuse the stored certificate")
	}

	// A configuration re-applied without caBundle (GitOps sync) gets it back.
	var cur admissionregistrationv1.ValidatingWebhookConfiguration
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "tessera"}, &cur); err != nil {
		t.Fatal(err)
	}
	cur.Webhooks[1].ClientConfig.CABundle = nil
	if err := e.Client.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	bundleCAs(t, e.Client) // checks all webhooks agree again

	// Inside the rotation window a new CA and certificate replace the old ones; the
	// bundle trusts both so replicas still serving the old certificate keep working.
	clk.SetTime(start.Add(61 * 24 * time.Hour))
	if rotated, err := mgr.Ensure(ctx); err != nil || !rotated {
		t.Fatalf("Ensure at day 61: rotated=%v err=%v, want a rotation", rotated, err)
	}
	second := leaf(t, dir)
	if second.SerialNumber.Cmp(first.SerialNumber) == 0 || !second.NotAfter.After(first.NotAfter) {
		t.Fatal("certificate was not replaced by a later one")
	}
	cas := bundleCAs(t, e.Client)
	if len(cas) != 2 {
		t.Fatalf("bundle has %d CAs, want new + previous", len(cas))
	}
	for name, c := range map[string]*x509.Certificate{"new": second, "previous": first} {
		if err := verifies(c, cas, dns, clk.Now()); err != nil {
			t.Fatalf("%s certificate does not verify against the bundle: %v", name, err)
		}
	}

	// Once the previous CA expired, it leaves the bundle.
	clk.SetTime(start.Add(91 * 24 * time.Hour))
	if _, err := mgr.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if cas := bundleCAs(t, e.Client); len(cas) != 1 || verifies(second, cas, dns, clk.Now()) != nil {
		t.Fatalf("bundle after the old CA expired has %d CAs, want only the current one", len(cas))
	}

	// A corrupted Secret is regenerated.
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(&secret), &secret); err != nil {
		t.Fatal(err)
	}
	secret.Data["tls.key"] = []byte("garbage")
	if err := e.Client.Update(ctx, &secret); err != nil {
		t.Fatal(err)
	}
	if rotated, err := mgr.Ensure(ctx); err != nil || !rotated {
		t.Fatalf("Ensure with a corrupted Secret: rotated=%v err=%v, want regeneration", rotated, err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
