package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/tessera-gpu/tessera/internal/cli"
	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
	"github.com/tessera-gpu/tessera/webhooks"
)

func init() { register(newWebhookCommand) }

type webhookFlags struct {
	port             int
	certDir          string
	namespace        string
	serviceName      string
	extraDNSNames    []string
	secretName       string
	mutatingConfig   string
	validatingConfig string
	certManager      bool
	certValidity     time.Duration
	certRotateBefore time.Duration
	serving          controller.Serving
	policyTimeout    time.Duration
	schedulerUsers   []string
	allowedScheds    []string
	schedAliases     []string
	kube             kubeclient.Options
}

func newWebhookCommand() *cobra.Command {
	f := webhookFlags{}
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Serve the admission webhooks that evaluate Rego policies",
		Long: `Serve Tessera's mutating and validating admission webhooks. Pods, Jobs, PodGroups
and the workload controllers' custom resources (JobSet, RayCluster, RayJob,
LeaderWorkerSet, PyTorchJob, MPIJob) get their queue, scheduler name, priority class and
gang size from Rego policies (the defaults plus every AdmissionPolicy); Queues and
AdmissionPolicies are validated.
Unless --cert-manager is set, the serving certificate is managed by the webhook itself
with cert-controller's rotator: a CA and a certificate for the Service in the Secret
--secret-name, which must exist and be mounted at --cert-dir (the Helm chart does both);
the CA is injected into both webhook configurations and the certificate re-signed before
it expires. The server starts once the certificate is on disk.`,
		Args: cobra.NoArgs,
		RunE: runDaemon(func() (func(context.Context) error, error) { return prepareWebhook(f) }),
	}
	fs := cmd.Flags()
	fs.IntVar(&f.port, "port", 9443, "HTTPS port of the webhook server")
	fs.StringVar(&f.certDir, "cert-dir", "/tmp/k8s-webhook-server/serving-certs", "directory holding tls.crt and tls.key")
	fs.StringVar(&f.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "Tessera's namespace (Secret and Service); defaults to $POD_NAMESPACE")
	fs.StringVar(&f.serviceName, "service-name", "tessera-webhook", "Service in front of the webhook; the certificate is issued for its DNS names")
	fs.StringSliceVar(&f.extraDNSNames, "cert-extra-dns-names", nil, "more DNS names for the self-managed certificate, for a webhook the API server reaches by URL (say localhost) rather than through the Service")
	fs.StringVar(&f.secretName, "secret-name", "tessera-webhook-tls", "Secret (in --namespace, existing, mounted at --cert-dir) holding the self-managed CA and serving certificate")
	fs.StringVar(&f.mutatingConfig, "mutating-config", "tessera", "MutatingWebhookConfiguration whose caBundle is kept in sync")
	fs.StringVar(&f.validatingConfig, "validating-config", "tessera", "ValidatingWebhookConfiguration whose caBundle is kept in sync")
	fs.BoolVar(&f.certManager, "cert-manager", false, "certificates are issued by cert-manager into --cert-dir and the caBundle injected by its CA injector")
	fs.DurationVar(&f.certValidity, "cert-validity", 90*24*time.Hour, "validity of a self-managed certificate")
	fs.DurationVar(&f.certRotateBefore, "cert-rotate-before", 30*24*time.Hour, "re-sign a self-managed certificate this long before it expires")
	f.serving.AddServingFlags(fs)
	fs.DurationVar(&f.policyTimeout, "policy-timeout", time.Second, "deadline for evaluating one request against the policy set")
	fs.StringSliceVar(&f.schedulerUsers, "scheduler-user", nil, "user names that may write the scheduler's pod annotations (tessera.dev/gpu-assignment); default: the ServiceAccount tessera-scheduler of --namespace")
	fs.StringSliceVar(&f.allowedScheds, "allowed-scheduler", nil, "schedulers besides tessera that GPU workloads may name in spec.schedulerName; a GPU workload naming any other is denied")
	fs.StringSliceVar(&f.schedAliases, "scheduler-name-alias", nil, "scheduler names that mean tessera: rewritten to tessera in every pod and pod template that names one (say volcano, once Tessera schedules in its place); a gang mode's scheduler name that is neither an alias nor allowed is refused on GPU workloads and warned of on the others")
	f.kube.AddFlags(fs, "")
	// -v (the root's) at 2 turns the decision log on; --vmodule sets it per file.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlag(klogFlags.Lookup("vmodule"))
	return cmd
}

// prepareWebhook checks the flags and reads the kubeconfig, then returns the webhook
// server to run.
func prepareWebhook(f webhookFlags) (func(context.Context) error, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	log := klog.NewKlogr()
	ctrl.SetLogger(log)
	cfg, err := restConfig(f.kube)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return serveWebhook(ctx, cfg, f) }, nil
}

// validate checks the flags that need no file and no cluster.
func (f webhookFlags) validate() error {
	return checks(
		cli.CheckPort("port", f.port),
		positive("policy-timeout", f.policyTimeout, "1s"),
		cli.CheckBindAddress("metrics-bind-address", f.serving.MetricsAddr, true),
		cli.CheckBindAddress("health-probe-bind-address", f.serving.ProbeAddr, true),
		f.kube.Validate(),
		webhooks.Settings{AllowedSchedulers: f.allowedScheds, SchedulerNameAliases: f.schedAliases}.Validate(),
		f.validateCerts())
}

// validateCerts checks the self-managed certificate's flags (unless cert-manager
// issues it).
func (f webhookFlags) validateCerts() error {
	if f.certManager {
		return nil
	}
	if f.namespace == "" {
		return fmt.Errorf("--namespace (or $POD_NAMESPACE) is required to manage the webhook certificate; or pass --cert-manager")
	}
	if f.certRotateBefore <= 0 || f.certRotateBefore >= f.certValidity {
		return fmt.Errorf("--cert-rotate-before=%s must be positive and shorter than --cert-validity=%s (otherwise every check would issue a new certificate)", f.certRotateBefore, f.certValidity)
	}
	if f.certValidity > caValidity {
		return fmt.Errorf("--cert-validity=%s must not exceed the CA's validity of %s", f.certValidity, caValidity)
	}
	return nil
}

// schedulerIdentity is --scheduler-user, else the scheduler's ServiceAccount in
// --namespace, else (no namespace) the webhooks package's default.
func (f webhookFlags) schedulerIdentity() []string {
	if len(f.schedulerUsers) > 0 || f.namespace == "" {
		return f.schedulerUsers
	}
	return []string{webhooks.SchedulerUser(f.namespace)}
}

// serveWebhook runs the webhook server, and the certificate rotator unless cert-manager
// provides the certificate, until ctx ends.
func serveWebhook(ctx context.Context, cfg *rest.Config, f webhookFlags) error {
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	certsReady := make(chan struct{})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   controller.ReconnectingInformers(crcache.Options{}),
		Metrics:                 f.serving.MetricsServer(),
		HealthProbeBindAddress:  f.serving.ProbeAddr,
		GracefulShutdownTimeout: ptr.To(controller.GracefulShutdownTimeout),
		WebhookServer: certGatedServer{
			Server: webhook.NewServer(webhook.Options{Port: f.port, CertDir: f.certDir}),
			ready:  certsReady,
		},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if f.certManager {
		close(certsReady)
	} else if err := rotator.AddRotator(mgr, certRotator(f, certsReady)); err != nil {
		return fmt.Errorf("webhook certificate rotator: %w", err)
	}
	// Setting up reads the API server's discovery, which takes no context.
	err = untilDone(ctx, func() error {
		_, err := webhooks.Setup(ctx, mgr, webhooks.Options{PolicyTimeout: f.policyTimeout, Metrics: true,
			SchedulerUsers: f.schedulerIdentity(), AllowedSchedulers: f.allowedScheds, SchedulerNameAliases: f.schedAliases,
			Namespace: f.namespace})
		return err
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	ctrl.Log.Info("starting webhook", "port", f.port, "certManager", f.certManager)
	return startManager(ctx, mgr, cacheSyncTimeout)
}

// caValidity is how long the self-managed CA is valid (cert-controller's default).
// Rotations re-sign only the serving certificate, with the same CA, so the caBundle never
// changes and a replica still serving the previous certificate (until the kubelet
// refreshes its mounted Secret, about a minute) stays trusted. cert-controller replaces
// the CA only when the Secret's CA is missing or unusable, or within --cert-rotate-before
// of its expiry (after almost 10 years); the bundle then holds the new CA alone and
// replicas are untrusted until their mounts refresh. The bundle therefore never needs to
// carry the previous CA as well.
const caValidity = 10 * 365 * 24 * time.Hour

// certRotator configures cert-controller's rotator for the webhook: a CA and a serving
// certificate for the Service's DNS names in the Secret --secret-name (created empty by
// the chart and mounted at --cert-dir), the CA injected into every webhook of both
// configurations. ready is closed once the certificate is on disk and the CA injected.
// Every replica runs it (no leader election): each needs ready closed to serve, and
// concurrent writes of the Secret are resolved by the API server's conflict check.
func certRotator(f webhookFlags, ready chan struct{}) *rotator.CertRotator {
	svc := f.serviceName + "." + f.namespace
	var hooks []rotator.WebhookInfo
	if f.mutatingConfig != "" {
		hooks = append(hooks, rotator.WebhookInfo{Name: f.mutatingConfig, Type: rotator.Mutating})
	}
	if f.validatingConfig != "" {
		hooks = append(hooks, rotator.WebhookInfo{Name: f.validatingConfig, Type: rotator.Validating})
	}
	return &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: f.namespace, Name: f.secretName},
		CertDir:        f.certDir,
		CAName:         "tessera-webhook-ca",
		CAOrganization: "tessera",
		DNSName:        svc + ".svc",
		ExtraDNSNames:  append([]string{f.serviceName, svc, svc + ".svc.cluster.local"}, f.extraDNSNames...),
		IsReady:        ready,
		Webhooks:       hooks,
		// The webhook server reloads the files when the kubelet updates the mounted
		// Secret; no restart needed.
		RestartOnSecretRefresh: false,
		RequireLeaderElection:  false,
		CaCertDuration:         caValidity,
		ServerCertDuration:     f.certValidity,
		LookaheadInterval:      f.certRotateBefore,
	}
}

// certGatedServer starts the webhook server only once ready is closed: the server reads
// its certificate when it starts. Until then StartedChecker, the readiness check, fails.
type certGatedServer struct {
	webhook.Server
	ready <-chan struct{}
}

func (s certGatedServer) Start(ctx context.Context) error {
	select {
	case <-s.ready:
		return s.Server.Start(ctx)
	case <-ctx.Done():
		return nil
	}
}

func (s certGatedServer) StartedChecker() healthz.Checker {
	started := s.Server.StartedChecker()
	return func(req *http.Request) error {
		select {
		case <-s.ready:
			return started(req)
		default:
			return errors.New("waiting for the webhook certificate (Secret mounted at --cert-dir, caBundle injected)")
		}
	}
}
