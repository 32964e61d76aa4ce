package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tessera-gpu/tessera/gitops/lint"
)

// jobsetVersion is the JobSet release hack/e2e-binaries.sh builds
// (test/e2e/tools/workloads/go.mod).
const jobsetVersion = "v0.11.1"

// startWorkloadControllers runs the JobSet controller, its webhooks served on
// https://127.0.0.1 with the test's certificate and registered as its release registers
// them, and the KubeRay operator (whose webhooks are off unless ENABLE_WEBHOOKS=true).
func (c *Cluster) startWorkloadControllers(ctx context.Context, _ string) error {
	certDir := filepath.Join(c.Dir, "jobset-webhook-certs")
	if err := writeSelfSignedCert(certDir, "127.0.0.1"); err != nil {
		return err
	}
	webhookPort, jobsetHealth := freePort(), freePort()
	// Its own certificate management is off: it would write a certificate for its
	// Service into a Secret and the CA bundle into the webhook configurations.
	config := filepath.Join(c.Dir, "jobset-config.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
webhook: {host: 127.0.0.1, port: %d, certDir: %q}
health: {healthProbeBindAddress: "127.0.0.1:%d"}
metrics: {bindAddress: "0"}
`, webhookPort, certDir, jobsetHealth), 0o644); err != nil {
		return err
	}
	jobset, err := c.run("jobset-controller", c.bins["JOBSET_CONTROLLER"], []string{"--config=" + config}, "KUBECONFIG="+c.Kubeconfig)
	if err != nil {
		return err
	}
	if err := waitReady(ctx, jobset, jobsetHealth); err != nil {
		return err
	}
	webhooks, err := c.jobSetWebhooks()
	if err != nil {
		return err
	}
	caBundle, err := os.ReadFile(filepath.Join(certDir, "tls.crt"))
	if err != nil {
		return err
	}
	if err := c.installWebhooks(ctx, webhooks, "https://127.0.0.1:"+strconv.Itoa(webhookPort), caBundle); err != nil {
		return err
	}
	rayHealth := freePort()
	ray, err := c.run("kuberay-operator", c.bins["KUBERAY_OPERATOR"], []string{
		"--enable-leader-election=false", "--metrics-addr=0", "--log-stdout-encoder=console",
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(rayHealth),
	}, "KUBECONFIG="+c.Kubeconfig)
	if err != nil {
		return err
	}
	return waitReady(ctx, ray, rayHealth)
}

// jobSetWebhooks are the webhook configurations of JobSet's release manifests, built
// with kustomize from config/default of its module: its pod webhooks see only the pods
// of JobSets.
func (c *Cluster) jobSetWebhooks() ([]client.Object, error) {
	dir, err := moduleDir("sigs.k8s.io/jobset@" + jobsetVersion)
	if err != nil {
		return nil, err
	}
	manifests, err := lint.Build(filepath.Join(dir, "config", "default"))
	if err != nil {
		return nil, fmt.Errorf("JobSet's config/default: %w", err)
	}
	file := filepath.Join(c.Dir, "jobset-manifests.yaml")
	if err := os.WriteFile(file, manifests, 0o644); err != nil {
		return nil, err
	}
	objs, err := c.env.DecodeFiles(file)
	if err != nil {
		return nil, err
	}
	var webhooks []client.Object
	for _, o := range objs {
		switch o.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration:
			webhooks = append(webhooks, o)
		}
	}
	if len(webhooks) != 2 {
		return nil, fmt.Errorf("%s: %d webhook configurations, want JobSet's mutating and validating ones", file, len(webhooks))
	}
	return webhooks, nil
}
