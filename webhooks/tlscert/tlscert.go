package tlscert

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Secret keys.
const (
	KeyCACert       = "ca.crt"
	KeyCAKey        = "ca.key"
	KeyPreviousCA   = "ca-previous.crt"
	KeyServingCert  = corev1.TLSCertKey
	KeyServingKey   = corev1.TLSPrivateKeyKey
	defaultValidity = 90 * 24 * time.Hour
	defaultRotate   = 30 * 24 * time.Hour
	defaultInterval = time.Hour
)

// Manager keeps the serving certificate valid. Ensure does one pass; Start runs
// Ensure every CheckInterval (it is a controller-runtime Runnable).
type Manager struct {
	Client client.Client
	// Namespace and SecretName locate the Secret holding CA and serving certificate.
	Namespace  string
	SecretName string
	// ServiceName is the webhook Service; the certificate is valid for its DNS names.
	ServiceName string
	// ExtraDNSNames are added to the serving certificate (e.g. "localhost").
	ExtraDNSNames []string
	// MutatingConfig and ValidatingConfig name the webhook configurations whose
	// caBundle is kept in sync; empty names are skipped.
	MutatingConfig   string
	ValidatingConfig string
	// CertDir receives tls.crt and tls.key for the webhook server; empty: not written.
	CertDir string
	// Validity of a new certificate (default 90 days); RotateBefore is how long before
	// expiry it is replaced (default 30 days); CheckInterval is how often Start checks.
	Validity      time.Duration
	RotateBefore  time.Duration
	CheckInterval time.Duration
	Clock         clock.Clock
	Log           logr.Logger
}

func (m *Manager) clock() clock.Clock {
	if m.Clock == nil {
		return clock.RealClock{}
	}
	return m.Clock
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// DNSNames are the names the serving certificate is valid for.
func (m *Manager) DNSNames() []string {
	s, ns := m.ServiceName, m.Namespace
	return append([]string{s, s + "." + ns, s + "." + ns + ".svc", s + "." + ns + ".svc.cluster.local"}, m.ExtraDNSNames...)
}

// retryInterval is how soon Start tries again after a failed check.
const retryInterval = 10 * time.Second

// Start implements manager.Runnable: it checks every CheckInterval, and within
// retryInterval after a failed check.
func (m *Manager) Start(ctx context.Context) error {
	interval := orDefault(m.CheckInterval, defaultInterval)
	next := interval
	_ = wait.DelayFunc(func() time.Duration { return next }).Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		next = interval
		if _, err := m.Ensure(ctx); err != nil {
			m.Log.Error(err, "webhook certificate check failed; retrying", "secret", m.Namespace+"/"+m.SecretName, "in", retryInterval)
			next = min(interval, retryInterval)
		}
		return false, nil
	})
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica writes
// its own files.
func (m *Manager) NeedLeaderElection() bool { return false }

// Ensure makes the Secret hold a valid certificate (generating or rotating it), writes
// it to CertDir and injects the CA bundle. It reports whether it generated a new one.
func (m *Manager) Ensure(ctx context.Context) (rotated bool, err error) {
	key := client.ObjectKey{Namespace: m.Namespace, Name: m.SecretName}
	var secret corev1.Secret
	err = m.Client.Get(ctx, key, &secret)
	switch {
	case apierrors.IsNotFound(err):
		secret = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.SecretName}}
	case err != nil:
		return false, fmt.Errorf("get secret %s: %w", key, err)
	}
	if reason := m.invalid(secret.Data); reason != "" {
		data, err := m.generate(secret.Data)
		if err != nil {
			return false, err
		}
		m.Log.Info("generated webhook certificate", "secret", key.String(), "reason", reason)
		secret.Type = corev1.SecretTypeOpaque
		secret.Data = data
		if secret.ResourceVersion == "" {
			err = m.Client.Create(ctx, &secret)
		} else {
			err = m.Client.Update(ctx, &secret)
		}
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
			// Another replica won the race: use what it wrote.
			if err := m.Client.Get(ctx, key, &secret); err != nil {
				return false, fmt.Errorf("get secret %s: %w", key, err)
			}
			if reason := m.invalid(secret.Data); reason != "" {
				return false, fmt.Errorf("secret %s changed concurrently and is not usable: %s", key, reason)
			}
		} else if err != nil {
			return false, fmt.Errorf("write secret %s: %w", key, err)
		} else {
			rotated = true
		}
	}
	if err := m.writeFiles(secret.Data); err != nil {
		return rotated, err
	}
	return rotated, m.inject(ctx, m.bundle(secret.Data))
}

// invalid says why data cannot serve until the next check, or "".
func (m *Manager) invalid(data map[string][]byte) string {
	if len(data[KeyCACert]) == 0 || len(data[KeyCAKey]) == 0 || len(data[KeyServingCert]) == 0 || len(data[KeyServingKey]) == 0 {
		return "no certificate yet"
	}
	pair, err := tls.X509KeyPair(data[KeyServingCert], data[KeyServingKey])
	if err != nil {
		return "serving key pair unusable: " + err.Error()
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return "serving certificate unparsable: " + err.Error()
	}
	ca, err := parseCert(data[KeyCACert])
	if err != nil {
		return "CA unparsable: " + err.Error()
	}
	if err := leaf.CheckSignatureFrom(ca); err != nil {
		return "serving certificate not signed by the CA"
	}
	now := m.clock().Now()
	rotateAt := leaf.NotAfter.Add(-orDefault(m.RotateBefore, defaultRotate))
	if caRotate := ca.NotAfter.Add(-orDefault(m.RotateBefore, defaultRotate)); caRotate.Before(rotateAt) {
		rotateAt = caRotate
	}
	if !now.Before(rotateAt) {
		return fmt.Sprintf("expires %s, rotating %s before", leaf.NotAfter.Format(time.RFC3339), orDefault(m.RotateBefore, defaultRotate))
	}
	for _, name := range m.DNSNames() {
		if leaf.VerifyHostname(name) != nil {
			return "certificate does not cover " + name
		}
	}
	return ""
}

// generate makes a new CA and serving certificate; the current CA, if still valid,
// is kept as the previous one for the bundle.
func (m *Manager) generate(old map[string][]byte) (map[string][]byte, error) {
	now := m.clock().Now()
	notAfter := now.Add(orDefault(m.Validity, defaultValidity))
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "tessera-webhook-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: m.ServiceName + "." + m.Namespace + ".svc"},
		DNSNames:     m.DNSNames(),
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create serving certificate: %w", err)
	}
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{
		KeyCACert:      pemBlock("CERTIFICATE", caDER),
		KeyCAKey:       pemBlock("EC PRIVATE KEY", caKeyDER),
		KeyServingCert: pemBlock("CERTIFICATE", der),
		KeyServingKey:  pemBlock("EC PRIVATE KEY", keyDER),
	}
	if prev, err := parseCert(old[KeyCACert]); err == nil && now.Before(prev.NotAfter) {
		data[KeyPreviousCA] = old[KeyCACert]
	}
	return data, nil
}

// bundle is the current CA plus the previous one while it is still valid.
func (m *Manager) bundle(data map[string][]byte) []byte {
	b := append([]byte(nil), data[KeyCACert]...)
	if prev, err := parseCert(data[KeyPreviousCA]); err == nil && m.clock().Now().Before(prev.NotAfter) {
		b = append(b, data[KeyPreviousCA]...)
	}
	return b
}

func (m *Manager) writeFiles(data map[string][]byte) error {
	if m.CertDir == "" {
		return nil
	}
	if err := os.MkdirAll(m.CertDir, 0o700); err != nil {
		return err
	}
	// Key first: the server's watcher reloads on the certificate's change.
	for _, f := range []struct {
		name string
		data []byte
	}{{KeyServingKey, data[KeyServingKey]}, {KeyServingCert, data[KeyServingCert]}} {
		path := filepath.Join(m.CertDir, f.name)
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, f.data) {
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) inject(ctx context.Context, bundle []byte) error {
	var errs []error
	if m.MutatingConfig != "" {
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		errs = append(errs, m.injectInto(ctx, m.MutatingConfig, cfg, bundle, func() []*admissionregistrationv1.WebhookClientConfig {
			out := make([]*admissionregistrationv1.WebhookClientConfig, len(cfg.Webhooks))
			for i := range cfg.Webhooks {
				out[i] = &cfg.Webhooks[i].ClientConfig
			}
			return out
		}))
	}
	if m.ValidatingConfig != "" {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		errs = append(errs, m.injectInto(ctx, m.ValidatingConfig, cfg, bundle, func() []*admissionregistrationv1.WebhookClientConfig {
			out := make([]*admissionregistrationv1.WebhookClientConfig, len(cfg.Webhooks))
			for i := range cfg.Webhooks {
				out[i] = &cfg.Webhooks[i].ClientConfig
			}
			return out
		}))
	}
	return errors.Join(errs...)
}

// injectInto sets caBundle on every webhook of the configuration obj named name.
func (m *Manager) injectInto(ctx context.Context, name string, obj client.Object, bundle []byte, clientConfigs func() []*admissionregistrationv1.WebhookClientConfig) error {
	kind := fmt.Sprintf("%T", obj)[len("*v1."):]
	if err := m.Client.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		return fmt.Errorf("get %s %s: %w", kind, name, err)
	}
	changed := false
	for _, cc := range clientConfigs() {
		if !bytes.Equal(cc.CABundle, bundle) {
			cc.CABundle, changed = bundle, true
		}
	}
	if !changed {
		return nil
	}
	if err := m.Client.Update(ctx, obj); err != nil {
		return fmt.Errorf("inject caBundle into %s %s: %w", kind, name, err)
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func parseCert(p []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(p)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}
