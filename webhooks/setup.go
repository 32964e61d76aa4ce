package webhooks

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/policy"
	"github.com/tessera-gpu/tessera/rego"
)

// Options configure Setup.
type Options struct {
	// PolicyTimeout bounds one request's evaluation; 0 means policy.DefaultTimeout.
	PolicyTimeout time.Duration
	// Metrics registers the metrics with controller-runtime's registry when true.
	Metrics bool
	// SchedulerUsers may write scheduling state (StateGuard); empty means
	// SchedulerUser(DefaultNamespace), the chart's scheduler ServiceAccount.
	SchedulerUsers []string
	// AllowedSchedulers may schedule GPU workloads besides tessera; a GPU workload that
	// names any other scheduler is denied.
	AllowedSchedulers []string
	// SchedulerNameAliases are rewritten to tessera in every pod and pod template
	// (Settings.SchedulerNameAliases).
	SchedulerNameAliases []string
	// Namespace is Tessera's namespace, never checked by the PrivilegeGuard (nor is
	// kube-system); empty means DefaultNamespace.
	Namespace string
}

// DefaultNamespace is the namespace the chart and the kustomize base install Tessera in.
const DefaultNamespace = "tessera-system"

// Webhooks is what Setup wired, for callers that want to inspect it.
type Webhooks struct {
	Engine     *policy.Engine
	Cluster    *CachedCluster
	Controller *PolicyController
	Mutating   *Handler
	Validating *Handler
}

// Setup wires the policy engine, the AdmissionPolicy controller and both handlers into
// mgr: the handlers on mgr's webhook server at MutatePath and ValidatePath, cluster
// data read from mgr's cache and refreshed on Queue, GPUNode and PriorityClass events,
// GPUProfiles read from it by workload (IndexProfiles) to right-size pods.
func Setup(ctx context.Context, mgr manager.Manager, opts Options) (*Webhooks, error) {
	users := opts.SchedulerUsers
	if len(users) == 0 {
		users = []string{SchedulerUser(DefaultNamespace)}
	}
	settings := Settings{SchedulerUsers: users, AllowedSchedulers: opts.AllowedSchedulers, SchedulerNameAliases: opts.SchedulerNameAliases}
	if err := settings.Validate(); err != nil {
		return nil, err
	}
	defaults, err := rego.Defaults()
	if err != nil {
		return nil, err
	}
	var (
		pm *policy.Metrics
		wm *Metrics
	)
	if opts.Metrics {
		pm, wm = policy.NewMetrics(metrics.Registry), NewMetrics(metrics.Registry)
	} else {
		pm, wm = policy.NewMetrics(nil), NewMetrics(nil)
	}
	log := mgr.GetLogger().WithName("webhook")
	engine := policy.NewEngine(opts.PolicyTimeout, pm)
	pc := &PolicyController{Client: mgr.GetClient(), Engine: engine, Defaults: defaults, Log: log.WithName("policies"), Metrics: wm}
	if err := pc.Start(ctx); err != nil {
		return nil, err
	}
	cc := &CachedCluster{Reader: mgr.GetCache(), Settings: settings}
	if err := invalidateOn(ctx, mgr, cc, &tesserav1.Queue{}, &tesserav1.GPUNode{}, &schedulingv1.PriorityClass{}); err != nil {
		return nil, err
	}
	// Namespaces and GPUProfiles are read per request; start their informers now, not on
	// the first request.
	if err := IndexProfiles(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, fmt.Errorf("index GPUProfiles by workload: %w", err)
	}
	for _, o := range []client.Object{&corev1.Namespace{}, &tesserav1.GPUProfile{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, o); err != nil {
			return nil, fmt.Errorf("informer for %T: %w", o, err)
		}
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("admissionpolicy").
		For(&tesserav1.AdmissionPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Several managers may run in one process (tests); names need not be unique.
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(pc); err != nil {
		return nil, fmt.Errorf("admission policy controller: %w", err)
	}
	claims, err := claimSource(ctx, mgr)
	if err != nil {
		return nil, err
	}
	ns := opts.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	guards := []Guard{&StateGuard{Users: users}, EnvGuard{}, LimitGuard{}, ImmutableGuard{}, &PlacementGuard{Users: users, Cluster: cc},
		&PrivilegeGuard{SystemNamespaces: []string{"kube-system", ns}}}
	w := &Webhooks{
		Engine:     engine,
		Cluster:    cc,
		Controller: pc,
		Mutating: &Handler{Mutating: true, ValidateOnMutate: map[string]bool{KindPod: true}, Evaluator: engine, Cluster: cc,
			Profiles: CachedProfiles{Reader: mgr.GetCache()}, Claims: claims, Metrics: wm, Guards: guards, Log: log.WithName("mutating")},
		Validating: &Handler{Evaluator: engine, Cluster: cc, Policies: pc, Claims: claims, Metrics: wm, Guards: guards, Log: log.WithName("validating")},
	}
	srv := mgr.GetWebhookServer()
	srv.Register(MutatePath, w.Mutating)
	srv.Register(ValidatePath, w.Validating)
	return w, nil
}

// claimSource reads resource claims from the manager's cache where the API server serves
// resource.k8s.io/v1 (their informers started now, not on the first pod); nil elsewhere.
func claimSource(ctx context.Context, mgr manager.Manager) (ClaimSource, error) {
	objs := []client.Object{&resourcev1.ResourceClaim{}, &resourcev1.ResourceClaimTemplate{}, &resourcev1.DeviceClass{}}
	for _, o := range objs {
		gvk, err := apiutil.GVKForObject(o, mgr.GetScheme())
		if err != nil {
			return nil, err
		}
		if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, nil // not served
		}
	}
	for _, o := range objs {
		if _, err := mgr.GetCache().GetInformer(ctx, o); err != nil {
			return nil, fmt.Errorf("informer for %T: %w", o, err)
		}
	}
	return CachedClaims{Reader: mgr.GetCache()}, nil
}

func invalidateOn(ctx context.Context, mgr manager.Manager, cc *CachedCluster, objs ...client.Object) error {
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { cc.Invalidate() },
		UpdateFunc: func(any, any) { cc.Invalidate() },
		DeleteFunc: func(any) { cc.Invalidate() },
	}
	for _, o := range objs {
		inf, err := mgr.GetCache().GetInformer(ctx, o)
		if err != nil {
			return fmt.Errorf("informer for %T: %w", o, err)
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	return nil
}
