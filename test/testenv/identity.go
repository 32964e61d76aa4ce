package testenv

import (
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// ServiceAccountConfig is e's REST config acting as user, a ServiceAccount
// (system:serviceaccount:NAMESPACE:NAME), with the groups the API server gives its token
// and the token's extra information (a node-bound token's node name, for example).
func (e *Env) ServiceAccountConfig(user string, extra map[string][]string) *rest.Config {
	ns, _, _ := strings.Cut(strings.TrimPrefix(user, "system:serviceaccount:"), ":")
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Extra: extra,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	return cfg
}

// WebhookManager is a manager, without metrics, whose webhook server listens where wo
// tells the API server to call it.
func (e *Env) WebhookManager(wo *envtest.WebhookInstallOptions) (ctrl.Manager, error) {
	return ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:        e.Scheme,
		Logger:        logr.Discard(),
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir}),
	})
}
