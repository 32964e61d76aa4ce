package chart

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/policy"
	"github.com/tessera-gpu/tessera/rego"
	"github.com/tessera-gpu/tessera/webhooks"
)

// hookObjects renders values and returns the `helm test` objects by kind/name, checking
// that each is a test hook and that the rest of the rendering holds none.
func hookObjects(t *testing.T, values string) map[string]object {
	t.Helper()
	s := valuesSet{name: values, values: values}
	ms, err := Render(chartDir, Options{Namespace: namespace, Values: s.parse(t)})
	if err != nil {
		t.Fatal(err)
	}
	hookFiles := map[string]bool{}
	for _, m := range ms {
		if m.Hook {
			hookFiles[m.Path] = true
		}
	}
	out := map[string]object{}
	for _, o := range render(t, s) {
		hook := str(o.obj, "metadata", "annotations", "helm.sh/hook")
		if hook != "" != hookFiles[o.source] {
			t.Errorf("%q: %s (%s): hook %q, but the template is marked Hook=%v", values, o.id(), o.source, hook, hookFiles[o.source])
		}
		if hook == "" {
			continue
		}
		if hook != "test" {
			t.Errorf("%q: %s is a %q hook; the chart has test hooks only", values, o.id(), hook)
		}
		out[o.id()] = o
	}
	return out
}

// testScript is the shell script of the test Pod.
func testScript(t *testing.T, pod object) string {
	t.Helper()
	cs, _ := get(pod.obj, "spec", "containers").([]any)
	if len(cs) != 1 {
		t.Fatalf("%s: %d containers", pod.id(), len(cs))
	}
	c := cs[0].(map[string]any)
	if cmd, _ := c["command"].([]any); !slices.Equal(cmd, []any{"/bin/sh", "-c"}) {
		t.Fatalf("%s: command %v", pod.id(), cmd)
	}
	args, _ := c["args"].([]any)
	if len(args) != 1 {
		t.Fatalf("%s: args %v", pod.id(), args)
	}
	return args[0].(string)
}

// `helm test` runs one Pod that checks the webhook, the scheduler's Lease and the node
// agent's DaemonSet, with a ServiceAccount that may only get those two; the objects are
// test hooks, so install and upgrade never create them and the kustomize base leaves
// them out.
func TestHelmTestHook(t *testing.T) {
	hooks := hookObjects(t, ``)
	want := []string{"Pod/tessera-test", "ServiceAccount/tessera-test", "Role/tessera-test", "RoleBinding/tessera-test"}
	for _, id := range want {
		if _, ok := hooks[id]; !ok {
			t.Errorf("defaults: %s is not a test hook", id)
		}
	}
	if len(hooks) != len(want) {
		t.Errorf("defaults: test hooks %v, want %v", keys(hooks), want)
	}
	pod := hooks["Pod/tessera-test"]
	if str(pod.obj, "spec", "restartPolicy") != "Never" || str(pod.obj, "spec", "serviceAccountName") != "tessera-test" {
		t.Errorf("the test Pod: restartPolicy %q serviceAccountName %q", str(pod.obj, "spec", "restartPolicy"), str(pod.obj, "spec", "serviceAccountName"))
	}
	// The RBAC objects come first (lower weight) and go when the test passed.
	for _, id := range want[1:] {
		a, _ := get(hooks[id].obj, "metadata", "annotations").(map[string]any)
		if a["helm.sh/hook-weight"] != "-1" || !strings.Contains(a["helm.sh/hook-delete-policy"].(string), "hook-succeeded") {
			t.Errorf("%s: annotations %v, want weight -1 and deleted when the test succeeded", id, a)
		}
	}
	role := hooks["Role/tessera-test"]
	if got := dumpRules(role.obj); got != "coordination.k8s.io/leases[tessera-scheduler]: get; apps/daemonsets[tessera-node-agent]: get" {
		t.Errorf("Role/tessera-test grants %s, want get on Lease tessera-scheduler and DaemonSet tessera-node-agent only", got)
	}

	// The script talks to what the chart renders: the webhook Service's https port and
	// ValidatePath, and the Lease the scheduler is told to hold.
	script := testScript(t, pod)
	var svcPort, leaseID string
	for _, o := range render(t, valuesSet{name: "defaults"}) {
		switch o.id() {
		case "Service/tessera-webhook":
			for _, p := range get(o.obj, "spec", "ports").([]any) {
				if str(p.(map[string]any), "name") == "https" {
					svcPort = fmt.Sprint(get(p, "port"))
				}
			}
		case "Deployment/tessera-scheduler":
			for _, a := range containers(o)[0]["args"].([]any) {
				if id, ok := strings.CutPrefix(a.(string), "--leader-election-id="); ok {
					leaseID = id
				}
			}
		}
	}
	for _, w := range []string{
		"https://tessera-webhook.$ns.svc:" + svcPort + webhooks.ValidatePath,
		"/namespaces/$ns/leases/" + leaseID + `"`,
		"ns=" + namespace + "\n",
	} {
		if svcPort == "" || leaseID == "" || !strings.Contains(script, w) {
			t.Errorf("the test script does not name %q (webhook Service port %q, Lease %q):\n%s", w, svcPort, leaseID, script)
		}
	}

	// One scheduler replica: no leader election, so no Lease to check; without the node
	// agent too, nothing to ask the API server and no token.
	hooks = hookObjects(t, `scheduler: {replicas: 1}`)
	if got := dumpRules(hooks["Role/tessera-test"].obj); got != "apps/daemonsets[tessera-node-agent]: get" {
		t.Errorf("scheduler.replicas 1: Role/tessera-test grants %s, want the DaemonSet only", got)
	}
	if s := testScript(t, hooks["Pod/tessera-test"]); strings.Contains(s, "leases/") {
		t.Errorf("scheduler.replicas 1: the script checks a Lease:\n%s", s)
	}
	hooks = hookObjects(t, `{scheduler: {replicas: 1}, nodeAgent: {enabled: false}}`)
	if len(hooks) != 1 || get(hooks["Pod/tessera-test"].obj, "spec", "automountServiceAccountToken") != false {
		t.Errorf("scheduler.replicas 1, no node agent: test hooks %v, want the Pod alone, without a token", keys(hooks))
	}
	if s := testScript(t, hooks["Pod/tessera-test"]); strings.Contains(s, "daemonsets/") {
		t.Errorf("no node agent: the script checks its DaemonSet:\n%s", s)
	}
	// No webhook: nothing to POST, no certificate to mount.
	hooks = hookObjects(t, `webhook: {enabled: false}`)
	pod = hooks["Pod/tessera-test"]
	if s := testScript(t, pod); strings.Contains(s, "tessera-webhook") || get(pod.obj, "spec", "volumes") != nil {
		t.Errorf("webhook off: the test Pod still checks or mounts the webhook:\n%s", s)
	}
	// Neither: no test.
	if hooks := hookObjects(t, `{webhook: {enabled: false}, scheduler: {enabled: false}, nodeAgent: {enabled: false}}`); len(hooks) != 0 {
		t.Errorf("webhook and scheduler off: test hooks %v", keys(hooks))
	}

	// The kustomize base holds no hook.
	b, err := os.ReadFile("../../deploy/kustomize/base/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "tests/") {
		t.Errorf("deploy/kustomize/base lists the helm test objects:\n%s", b)
	}
}

// The test Pod's script, run here with sh and curl against a webhook server running
// Tessera's real validating handler (TLS for the Service's DNS name, verified against the
// CA file the Pod mounts) and a stand-in API server serving the Lease: it passes when the
// webhook allows the review and a scheduler pod holds the Lease, and fails, saying why,
// when either is not so.
func TestHelmTestScriptRuns(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	script := testScript(t, hookObjects(t, ``)["Pod/tessera-test"])
	dir := t.TempDir()

	// The webhook: Tessera's validating handler with the default policies.
	engine := policy.NewEngine(time.Second, nil)
	set, err := rego.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := engine.Load(ctx, set); err != nil {
		t.Fatal(err)
	}
	cluster, err := webhooks.NewStaticCluster(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var deny bool
	validating := &webhooks.Handler{Evaluator: engine, Cluster: cluster}
	mux := http.NewServeMux()
	mux.HandleFunc(webhooks.ValidatePath, func(w http.ResponseWriter, r *http.Request) {
		if deny {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"tessera-helm-test","allowed":false}}`))
			return
		}
		validating.ServeHTTP(w, r)
	})
	webhookHost := "tessera-webhook." + namespace + ".svc"
	caPEM, cert := serving(t, webhookHost)
	webhookSrv := httptest.NewUnstartedServer(mux)
	webhookSrv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	webhookSrv.StartTLS()
	defer webhookSrv.Close()
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}

	// The API server: the Lease, compact or indented (the API server indents for curl).
	holder := "tessera-scheduler-7c9f8d6b5-x2k4q_0f6c1a4e-7d8b-4c3e-9f21-3b5a6c7d8e9f"
	var leaseJSON, agentsJSON string
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		objects := map[string]string{
			"/apis/coordination.k8s.io/v1/namespaces/" + namespace + "/leases/tessera-scheduler": leaseJSON,
			"/apis/apps/v1/namespaces/" + namespace + "/daemonsets/tessera-node-agent":           agentsJSON,
		}
		obj, ok := objects[r.URL.Path]
		if !ok || r.Header.Get("Authorization") != "Bearer t0ken" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		_, _ = w.Write([]byte(obj))
	}))
	defer api.Close()
	saDir := filepath.Join(dir, "sa")
	if err := os.MkdirAll(saDir, 0o755); err != nil {
		t.Fatal(err)
	}
	apiCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(saDir, "ca.crt"), apiCA, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(saDir, "token"), []byte("t0ken"), 0o600); err != nil {
		t.Fatal(err)
	}

	// curl reaches the webhook's Service name on the local server; the Pod's paths point here.
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	realCurl, _ := exec.LookPath("curl")
	_, port, _ := net.SplitHostPort(webhookSrv.Listener.Addr().String())
	wrapper := "#!/bin/sh\nexec " + realCurl + " --connect-to " + webhookHost + ":443:127.0.0.1:" + port + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "curl"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	local := strings.NewReplacer(
		"/etc/tessera-test/webhook/ca.crt", caFile,
		"/var/run/secrets/kubernetes.io/serviceaccount", saDir,
		"https://kubernetes.default.svc", api.URL,
		"retry 30 ", "retry 2 ",
	).Replace(script)
	if local == script {
		t.Fatal("the script names none of the paths this test replaces")
	}

	run := func() (string, bool) {
		cmd := exec.Command("/bin/sh", "-c", local)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		return string(out), err == nil
	}
	compact := `{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"tessera-scheduler","namespace":"` + namespace + `"},"spec":{"holderIdentity":"` + holder + `","leaseDurationSeconds":15}}`
	indented := "{\n  \"kind\": \"Lease\",\n  \"spec\": {\n    \"holderIdentity\": \"" + holder + "\",\n    \"leaseDurationSeconds\": 15\n  }\n}\n"
	agents := func(desired, ready int) string {
		return fmt.Sprintf("{\n  \"kind\": \"DaemonSet\",\n  \"status\": {\n    \"currentNumberScheduled\": %d,\n    \"desiredNumberScheduled\": %d,\n    \"numberReady\": %d\n  }\n}\n", desired, desired, ready)
	}
	for _, c := range []struct {
		name      string
		lease     string
		agents    string
		deny      bool
		pass      bool
		wantOut   []string
		rejectOut []string
	}{
		{name: "healthy, compact Lease", lease: compact, agents: agents(2, 2), pass: true,
			wantOut: []string{"ok: webhook", "ok: scheduler leader " + holder, "ok: node agent ready on 2 of 2 node(s)"}, rejectOut: []string{"FAIL", "not verified"}},
		{name: "healthy, indented Lease", lease: indented, agents: agents(2, 2), pass: true, wantOut: []string{"ok: scheduler leader " + holder}},
		{name: "no leader", lease: strings.Replace(compact, holder, "", 1), agents: agents(2, 2),
			wantOut: []string{"ok: webhook", "FAIL: no tessera-scheduler replica holds the Lease", "lease: "}},
		{name: "webhook denies", lease: compact, agents: agents(2, 2), deny: true,
			wantOut: []string{"FAIL: webhook", `"allowed":false`, "ok: scheduler leader"}},
		{name: "node agent on no node", lease: compact, agents: agents(0, 0),
			wantOut: []string{"the node agent runs on no node: no node matches nodeAgent.nodeSelector (feature.node.kubernetes.io/pci-10de.present=true)", "FAIL: node agent"}},
		{name: "node agents not ready", lease: compact, agents: agents(2, 1),
			wantOut: []string{"node agent ready on 1 of 2 node(s)", "RuntimeClass nvidia", "FAIL: node agent"}},
	} {
		leaseJSON, agentsJSON, deny = c.lease, c.agents, c.deny
		out, ok := run()
		if ok != c.pass {
			t.Errorf("%s: passed=%v, want %v:\n%s", c.name, ok, c.pass, out)
		}
		checkSays(t, c.name+": the output", out, c.wantOut, c.rejectOut)
	}
}

// serving returns a CA (PEM) and a serving certificate it signed for host.
func serving(t *testing.T, host string) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tessera-webhook-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func keys(m map[string]object) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// dumpRules writes a role's rules as group/resource[names]: verbs; ...
func dumpRules(role map[string]any) string {
	rules, _ := role["rules"].([]any)
	var out []string
	for _, r := range rules {
		r := r.(map[string]any)
		j := func(f string) string {
			var s []string
			l, _ := r[f].([]any)
			for _, v := range l {
				s = append(s, fmt.Sprint(v))
			}
			return strings.Join(s, ",")
		}
		x := j("apiGroups") + "/" + j("resources")
		if n := j("resourceNames"); n != "" {
			x += "[" + n + "]"
		}
		out = append(out, x+": "+j("verbs"))
	}
	return strings.Join(out, "; ")
}
