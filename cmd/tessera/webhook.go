package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/tessera-gpu/tessera/webhooks"
	"github.com/tessera-gpu/tessera/webhooks/tlscert"
)

func init() { register(newWebhookCommand) }

type webhookFlags struct {
	port             int
	certDir          string
	namespace        string
	serviceName      string
	secretName       string
	mutatingConfig   string
	validatingConfig string
	certManager      bool
	certValidity     time.Duration
	certRotateBefore time.Duration
	metricsAddr      string
	probeAddr        string
	policyTimeout    time.Duration
	kubeconfig       string
}

func newWebhookCommand() *cobra.Command {
	f := webhookFlags{}
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Serve the admission webhooks that evaluate Rego policies",
		Long: `Serve Tessera's mutating and validating admission webhooks. Pods, Jobs and PodGroups
get their queue, scheduler name, priority class and gang size from Rego policies (the
defaults plus every AdmissionPolicy); Queues and AdmissionPolicies are validated.
The serving certificate is managed by the webhook itself unless --cert-manager is set.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runWebhook(ctx, f)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&f.port, "port", 9443, "HTTPS port of the webhook server")
	fs.StringVar(&f.certDir, "cert-dir", "/tmp/k8s-webhook-server/serving-certs", "directory holding tls.crt and tls.key")
	fs.StringVar(&f.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "Tessera's namespace (Secret and Service); defaults to $POD_NAMESPACE")
	fs.StringVar(&f.serviceName, "service-name", "tessera-webhook", "Service in front of the webhook; the certificate is issued for its DNS names")
	fs.StringVar(&f.secretName, "secret-name", "tessera-webhook-tls", "Secret holding the self-managed CA and serving certificate")
	fs.StringVar(&f.mutatingConfig, "mutating-config", "tessera", "MutatingWebhookConfiguration whose caBundle is kept in sync")
	fs.StringVar(&f.validatingConfig, "validating-config", "tessera", "ValidatingWebhookConfiguration whose caBundle is kept in sync")
	fs.BoolVar(&f.certManager, "cert-manager", false, "certificates are issued by cert-manager into --cert-dir and the caBundle injected by its CA injector")
	fs.DurationVar(&f.certValidity, "cert-validity", 90*24*time.Hour, "validity of a self-managed certificate")
	fs.DurationVar(&f.certRotateBefore, "cert-rotate-before", 30*24*time.Hour, "rotate a self-managed certificate this long before it expires")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.DurationVar(&f.policyTimeout, "policy-timeout", time.Second, "deadline for evaluating one request against the policy set")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; empty: $KUBECONFIG or the in-cluster config")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	for _, name := range []string{"v", "vmodule"} {
		fs.AddGoFlag(klogFlags.Lookup(name)) // --v=2 turns the decision log on
	}
	return cmd
}

func runWebhook(ctx context.Context, f webhookFlags) error {
	if !f.certManager && f.namespace == "" {
		return fmt.Errorf("--namespace (or $POD_NAMESPACE) is required to manage the webhook certificate; or pass --cert-manager")
	}
	log := klog.NewKlogr()
	ctrl.SetLogger(log)
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress: f.probeAddr,
		WebhookServer:          webhook.NewServer(webhook.Options{Port: f.port, CertDir: f.certDir}),
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if !f.certManager {
		certs := &tlscert.Manager{
			Client: mgr.GetClient(), Namespace: f.namespace, SecretName: f.secretName, ServiceName: f.serviceName,
			MutatingConfig: f.mutatingConfig, ValidatingConfig: f.validatingConfig, CertDir: f.certDir,
			Validity: f.certValidity, RotateBefore: f.certRotateBefore, Log: log.WithName("certs"),
		}
		// The server reads its certificate when it starts: write one first, through a
		// direct client since the cache is not running yet.
		direct := *certs
		if direct.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			return err
		}
		if _, err := direct.Ensure(ctx); err != nil {
			// Missing webhook configurations are injected later by the certificate loop;
			// without a certificate on disk the server cannot start at all.
			if _, statErr := os.Stat(filepath.Join(f.certDir, corev1.TLSCertKey)); statErr != nil {
				return fmt.Errorf("webhook certificate: %w", err)
			}
			log.Error(err, "webhook certificate set up partly; retrying in the background")
		}
		if err := mgr.Add(certs); err != nil {
			return err
		}
	}
	if _, err := webhooks.Setup(ctx, mgr, webhooks.Options{PolicyTimeout: f.policyTimeout, Metrics: true}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	log.Info("starting webhook", "port", f.port, "certManager", f.certManager)
	return mgr.Start(ctx)
}
