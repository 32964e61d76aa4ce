package chart

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/kube"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/test/testenv"
	"github.com/tessera-gpu/tessera/webhooks"
)

// installValues are the values of `helm install` (the images set, as docs/install.md
// says); upgradeValues change one setting that every webhook configuration carries.
const (
	installValues = `
image: {repository: registry.example.com/tessera/tessera, tag: "1.0.0"}
nodeAgent: {image: {repository: registry.example.com/tessera/tessera-node-agent, tag: "1.0.0"}}
`
	upgradeValues = installValues + `webhook: {excludeNamespaces: [ingress-nginx]}
`
)

// The chart installed, upgraded and uninstalled with Helm into a cluster that already
// runs the platform software of a GPU cluster: a GPU-Operator-like DaemonSet at
// system-node-critical in gpu-operator, a monitoring stack at system-cluster-critical in
// monitoring (labelled a platform namespace before the install, as docs/install.md says)
// and cert-manager. There is no controller-manager and no pod runs here, so their pods
// are created as their controllers create them, at each step: before Tessera, after
// `helm install`, after `helm upgrade` with a changed value, after `helm uninstall`.
// While installed, the chart's webhook configurations call Tessera's real webhooks,
// served by this process (a post-renderer points them at it instead of the Service, as
// envtest does), and a tenant's pod at system-cluster-critical is refused, so the
// webhook is known to intercept. Helm installs the CRDs and keeps them through the
// upgrade and the uninstall; after the uninstall no webhook configuration or admission
// policy of Tessera is left (the webhook itself creates none: its certificate rotator
// only injects the caBundle into the chart's two configurations).
func TestInstallWithPlatformPods(t *testing.T) {
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	ctx := testenv.Context(t, 2*time.Minute)
	c := env.Client

	p := startPlatform(ctx, t, env)
	p.podsCreated(ctx, t, "before Tessera")
	before := admissionObjects(ctx, t, c)

	wo := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := wo.PrepWithoutInstalling(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wo.Cleanup() })
	cfg := helmConfig(t, env)

	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = ReleaseName, namespace, true
	install.WaitStrategy, install.Timeout = kube.HookOnlyStrategy, time.Minute
	install.PostRenderer = localWebhooks{wo}
	ch, err := Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := install.RunWithContext(ctx, ch, valuesSet{name: "install", values: installValues}.parse(t)); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	crdsKept(ctx, t, c, "after helm install")
	var queue tesserav1.Queue
	if err := c.Get(ctx, client.ObjectKey{Name: "default"}, &queue); err != nil {
		t.Fatalf("the chart's Queue default: %v", err)
	}
	stopWebhooks := serveWebhooks(ctx, t, env, wo)
	p.podsCreated(ctx, t, "after helm install")
	p.tenantRefused(ctx, t, "after helm install")

	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace, upgrade.WaitStrategy, upgrade.Timeout = namespace, kube.HookOnlyStrategy, time.Minute
	upgrade.PostRenderer = localWebhooks{wo}
	if _, err := upgrade.RunWithContext(ctx, ReleaseName, ch, valuesSet{name: "upgrade", values: upgradeValues}.parse(t)); err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	var mutating admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: "tessera"}, &mutating); err != nil {
		t.Fatal(err)
	}
	if sel := mutating.Webhooks[0].NamespaceSelector.String(); !strings.Contains(sel, "ingress-nginx") {
		t.Errorf("after helm upgrade: namespaceSelector %s does not leave out ingress-nginx", sel)
	}
	crdsKept(ctx, t, c, "after helm upgrade")
	var upgraded tesserav1.Queue
	if err := c.Get(ctx, client.ObjectKey{Name: "default"}, &upgraded); err != nil || upgraded.UID != queue.UID {
		t.Errorf("after helm upgrade: the Queue default is not the one installed (%v)", err)
	}
	p.podsCreated(ctx, t, "after helm upgrade")
	p.tenantRefused(ctx, t, "after helm upgrade")

	installed := admissionObjects(ctx, t, c)
	t.Logf("installed: %v", installed)
	for _, id := range []string{"MutatingWebhookConfiguration/tessera", "ValidatingWebhookConfiguration/tessera"} {
		if !slices.Contains(installed, id) {
			t.Errorf("installed: no %s among %v", id, installed)
		}
	}
	uninstall := action.NewUninstall(cfg)
	uninstall.WaitStrategy, uninstall.Timeout = kube.HookOnlyStrategy, time.Minute
	if _, err := uninstall.Run(ReleaseName); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	stopWebhooks()
	if after := admissionObjects(ctx, t, c); !slices.Equal(after, before) {
		t.Errorf("after helm uninstall: admission objects %v, before Tessera %v", after, before)
	}
	crdsKept(ctx, t, c, "after helm uninstall")
	p.podsCreated(ctx, t, "after helm uninstall")
}

// helmConfig is Helm's configuration for env, releases stored as Secrets as the CLI does.
func helmConfig(t *testing.T, env *testenv.Env) *action.Configuration {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	ns := namespace
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	if err := cfg.Init(flags, namespace, "secret"); err != nil {
		t.Fatal(err)
	}
	dc, err := flags.ToDiscoveryClient()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := dc.ServerVersion(); err != nil || !strings.HasPrefix(v.GitVersion, "v0.0.0-") {
		return cfg // Helm reads the version
	}
	// hack/k8s-binaries.sh stamps no version into kube-apiserver, which then reports
	// v0.0.0-master, and the chart's kubeVersion refuses it: the version is that of the
	// k8s.io/kubernetes module it builds, in test/tools/go.mod.
	mod, err := os.ReadFile("../tools/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v(\d+)\.(\d+)\.\d+)`).FindStringSubmatch(string(mod))
	if m == nil {
		t.Fatal("no k8s.io/kubernetes in test/tools/go.mod")
	}
	apis, err := action.GetVersionSet(dc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Capabilities = &common.Capabilities{APIVersions: apis, HelmVersion: common.DefaultCapabilities.HelmVersion,
		KubeVersion: common.KubeVersion{Version: m[1], Major: m[2], Minor: m[3]}}
	return cfg
}

// localWebhooks is a Helm post-renderer that points the webhook configurations at the
// webhook server of wo rather than at the Service, which no pod backs here: a URL and
// wo's CA, as envtest does with the configurations it installs.
type localWebhooks struct {
	wo *envtest.WebhookInstallOptions
}

func (l localWebhooks) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	out := &bytes.Buffer{}
	for _, doc := range splitDocs(in.String()) {
		var head metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			return nil, err
		}
		var obj any
		l.wo.MutatingWebhooks, l.wo.ValidatingWebhooks = nil, nil
		switch head.Kind {
		case "MutatingWebhookConfiguration":
			c := &admissionregistrationv1.MutatingWebhookConfiguration{}
			l.wo.MutatingWebhooks, obj = append(l.wo.MutatingWebhooks, c), c
		case "ValidatingWebhookConfiguration":
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			l.wo.ValidatingWebhooks, obj = append(l.wo.ValidatingWebhooks, c), c
		}
		if obj != nil {
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				return nil, err
			}
			if err := l.wo.ModifyWebhookDefinitions(); err != nil {
				return nil, err
			}
			b, err := yaml.Marshal(obj)
			if err != nil {
				return nil, err
			}
			doc = string(b)
		}
		out.WriteString("---\n" + doc)
	}
	return out, nil
}

// serveWebhooks serves Tessera's webhooks, as the chart's webhook Deployment sets them up
// for the release namespace, on wo's local address; stop ends them.
func serveWebhooks(ctx context.Context, t *testing.T, env *testenv.Env, wo *envtest.WebhookInstallOptions) (stop func()) {
	t.Helper()
	mgr, err := env.WebhookManager(wo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := webhooks.Setup(ctx, mgr, webhooks.Options{Namespace: namespace}); err != nil {
		t.Fatal(err)
	}
	stop = testenv.RunManager(t, ctx, mgr)
	started := mgr.GetWebhookServer().StartedChecker()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return started(nil) == nil, nil
	}); err != nil {
		t.Fatalf("the webhook server does not start: %v", err)
	}
	return stop
}

// platform is what the cluster runs before Tessera, with the clients of the controllers
// that create its pods.
type platform struct {
	gpuOperator             *appsv1.DaemonSet
	monitoring, certManager *appsv1.ReplicaSet
	dsController            client.Client
	rsController            client.Client
	steps                   int
}

func startPlatform(ctx context.Context, t *testing.T, env *testenv.Env) *platform {
	t.Helper()
	c := env.Client
	for ns, labels := range map[string]map[string]string{
		"gpu-operator": nil,
		"monitoring":   {tesserav1.LabelPlatform: "true"},
		"cert-manager": nil,
		"team-a":       nil,
	} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}); err != nil {
			t.Fatal(err)
		}
	}
	p := &platform{
		gpuOperator: &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "gpu-operator", Name: "nvidia-device-plugin-daemonset"},
			Spec: appsv1.DaemonSetSpec{Template: podTemplate("nvidia-device-plugin", "system-node-critical")}},
		monitoring: &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "kube-state-metrics-6d4f8b7c9"},
			Spec: appsv1.ReplicaSetSpec{Template: podTemplate("kube-state-metrics", "system-cluster-critical")}},
		certManager: &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "cert-manager", Name: "cert-manager-webhook-5b8d9c"},
			Spec: appsv1.ReplicaSetSpec{Template: podTemplate("cert-manager-webhook", "")}},
		dsController: as(t, env, webhooks.DaemonSetControllerUser),
		rsController: as(t, env, "system:serviceaccount:kube-system:replicaset-controller"),
	}
	p.gpuOperator.Spec.Selector = metav1.SetAsLabelSelector(p.gpuOperator.Spec.Template.Labels)
	p.monitoring.Spec.Selector = metav1.SetAsLabelSelector(p.monitoring.Spec.Template.Labels)
	p.certManager.Spec.Selector = metav1.SetAsLabelSelector(p.certManager.Spec.Template.Labels)
	gpuTemplate := &p.gpuOperator.Spec.Template.Spec
	gpuTemplate.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	gpuTemplate.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: new(true)}
	for _, o := range []client.Object{p.gpuOperator, p.monitoring, p.certManager} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func podTemplate(app, class string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}}, Spec: corev1.PodSpec{
		PriorityClassName: class,
		Containers:        []corev1.Container{{Name: "main", Image: "registry.example.com/" + app}},
	}}
}

// podsCreated creates one pod of each platform workload as its controller does: from the
// template, owned by the controller, as the controller's user; the DaemonSet's pod with
// the node affinity and tolerations the DaemonSet controller adds.
func (p *platform) podsCreated(ctx context.Context, t *testing.T, step string) {
	t.Helper()
	p.steps++
	ds := podOf(p.gpuOperator, "DaemonSet", p.gpuOperator.Spec.Template, p.steps)
	ds.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu-node-1"}}}}}}}}
	ds.Spec.Tolerations = append(ds.Spec.Tolerations,
		corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	created(ctx, t, p.dsController, step+": GPU Operator DaemonSet pod at system-node-critical", ds)
	if ds.Spec.PriorityClassName != "system-node-critical" || ds.Spec.SchedulerName != corev1.DefaultSchedulerName {
		t.Errorf("%s: the DaemonSet pod has class %q and scheduler %q, want system-node-critical and %s",
			step, ds.Spec.PriorityClassName, ds.Spec.SchedulerName, corev1.DefaultSchedulerName)
	}
	created(ctx, t, p.rsController, step+": monitoring pod at system-cluster-critical",
		podOf(p.monitoring, "ReplicaSet", p.monitoring.Spec.Template, p.steps))
	created(ctx, t, p.rsController, step+": cert-manager pod", podOf(p.certManager, "ReplicaSet", p.certManager.Spec.Template, p.steps))
}

// tenantRefused checks that the webhook intercepts: the monitoring workload's pod in a
// tenant's namespace is refused its class.
func (p *platform) tenantRefused(ctx context.Context, t *testing.T, step string) {
	t.Helper()
	pod := podOf(p.monitoring, "ReplicaSet", p.monitoring.Spec.Template, p.steps)
	pod.Namespace = "team-a"
	err := p.rsController.Create(ctx, pod, client.DryRunAll)
	if want := `priorityClassName "system-cluster-critical" is not allowed in queue "default"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: a pod at system-cluster-critical in tenant namespace team-a: %v, want refused: %s", step, err, want)
	}
	t.Logf("%s: tenant's pod refused: %v", step, err)
}

func podOf(owner client.Object, kind string, tmpl corev1.PodTemplateSpec, step int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: fmt.Sprintf("%s-%d", owner.GetName(), step), Labels: tmpl.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind(kind))}},
		Spec: *tmpl.Spec.DeepCopy(),
	}
}

// created creates pod as c. A webhook the API server cannot call yet (just started, or
// just removed and not yet seen gone by the API server) is waited for, a few seconds; a
// refusal fails the test.
func created(ctx context.Context, t *testing.T, c client.Client, what string, pod *corev1.Pod) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err = c.Create(ctx, pod.DeepCopy(), client.DryRunAll); err == nil || !strings.Contains(err.Error(), "failed calling webhook") || time.Now().After(deadline) {
			break
		}
	}
	if err == nil {
		err = c.Create(ctx, pod)
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// as is a client acting as user, a ServiceAccount of kube-system (a controller of
// kube-controller-manager, whose RBAC is the API server's bootstrap policy).
func as(t *testing.T, env *testenv.Env, user string) client.Client {
	t.Helper()
	c, err := client.New(env.ServiceAccountConfig(user, nil), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// crdsKept checks that the CRDs of the chart's crds/ are in the cluster.
func crdsKept(ctx context.Context, t *testing.T, c client.Client, step string) {
	t.Helper()
	for _, crd := range chartCRDs(t) {
		if err := c.Get(ctx, client.ObjectKey{Name: crd.GetName()}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
			t.Errorf("%s: CRD %s: %v", step, crd.GetName(), err)
		}
	}
}

// admissionObjects lists the cluster's webhook configurations and admission policies
// (with their bindings) as kind/name, sorted.
func admissionObjects(ctx context.Context, t *testing.T, c client.Client) []string {
	t.Helper()
	var ids []string
	for _, l := range []client.ObjectList{
		&admissionregistrationv1.MutatingWebhookConfigurationList{},
		&admissionregistrationv1.ValidatingWebhookConfigurationList{},
		&admissionregistrationv1.ValidatingAdmissionPolicyList{},
		&admissionregistrationv1.ValidatingAdmissionPolicyBindingList{},
		&admissionregistrationv1.MutatingAdmissionPolicyList{},
		&admissionregistrationv1.MutatingAdmissionPolicyBindingList{},
	} {
		if err := c.List(ctx, l); err != nil {
			t.Fatalf("list %T: %v", l, err)
		}
		kind := strings.TrimSuffix(fmt.Sprintf("%T", l)[len("*v1."):], "List")
		if err := meta.EachListItem(l, func(o runtime.Object) error {
			ids = append(ids, kind+"/"+o.(client.Object).GetName())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(ids)
	return ids
}
