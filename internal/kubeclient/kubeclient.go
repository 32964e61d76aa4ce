// Package kubeclient is how Tessera's two binaries (tessera and tessera-node-agent)
// find their cluster and talk to it: the --kubeconfig and --request-timeout flags, the
// kubeconfig lookup ($KUBECONFIG, ~/.kube/config, in-cluster) and a request timeout
// that bounds every request to the API server, watches included, without cutting a
// watch that streams.
package kubeclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// DefaultRequestTimeout bounds one request to the API server unless
// --request-timeout says otherwise.
const DefaultRequestTimeout = 30 * time.Second

// KubeconfigUsage is --kubeconfig's help where the default lookup applies.
const KubeconfigUsage = "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then the in-cluster config)"

// ErrNoKubeconfig is returned when no flag, no $KUBECONFIG, no ~/.kube/config and no
// in-cluster configuration name a cluster.
var ErrNoKubeconfig = errors.New("no kubeconfig: set --kubeconfig or $KUBECONFIG, or run in a cluster")

// Options are a command's --kubeconfig and --request-timeout.
type Options struct {
	// Kubeconfig is the kubeconfig file; empty: $KUBECONFIG, ~/.kube/config, then the
	// in-cluster configuration.
	Kubeconfig string
	// RequestTimeout bounds each request (see WithRequestTimeout); 0: none.
	RequestTimeout time.Duration
}

// AddFlags declares --kubeconfig (with usage, KubeconfigUsage when empty) and
// --request-timeout.
func (o *Options) AddFlags(fs *pflag.FlagSet, usage string) {
	if usage == "" {
		usage = KubeconfigUsage
	}
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", usage)
	o.AddTimeoutFlag(fs, "")
}

// AddTimeoutFlag declares --request-timeout; usage prefixes the help (say
// "--from-cluster: ").
func (o *Options) AddTimeoutFlag(fs *pflag.FlagSet, prefix string) {
	fs.DurationVar(&o.RequestTimeout, "request-timeout", DefaultRequestTimeout,
		prefix+"give up on a request to the API server that has not answered by then, as kubectl's --request-timeout (0: wait forever); a watch is bounded until the server starts streaming")
}

// Validate checks the flags before anything connects.
func (o Options) Validate() error {
	if o.RequestTimeout < 0 {
		return fmt.Errorf("--request-timeout %s: must not be negative (for example 30s; 0 waits forever)", o.RequestTimeout)
	}
	return nil
}

// Config is the client configuration of Kubeconfig (Load) with RequestTimeout.
func (o Options) Config() (*rest.Config, error) {
	cfg, err := Load(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	WithRequestTimeout(cfg, o.RequestTimeout)
	return cfg, nil
}

// Load reads the kubeconfig file path; when path is empty, the first of $KUBECONFIG,
// ~/.kube/config and the in-cluster configuration that exists. With none of them it
// returns ErrNoKubeconfig.
func Load(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	switch {
	case err == nil:
		return cfg, nil
	case clientcmd.IsEmptyConfig(err) && path == "":
		return nil, ErrNoKubeconfig
	case path != "":
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	return nil, fmt.Errorf("kubeconfig: %w", err)
}

// LoadFile reads exactly the kubeconfig file path (named by flag in errors), with the
// request timeout.
func LoadFile(flag, path string, timeout time.Duration) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	WithRequestTimeout(cfg, timeout)
	return cfg, nil
}

// WithRequestTimeout makes every request of the clients built from cfg fail with a
// *TimeoutError when the API server has not answered within d: an ordinary request
// must be answered in full by then, a watch (or an upgraded connection) must get its
// response headers by then and may stream as long as it lasts. rest.Config.Timeout is
// not used: it would cut every informer's watch after d. d <= 0 leaves cfg as it is.
func WithRequestTimeout(cfg *rest.Config, d time.Duration) {
	if d <= 0 {
		return
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &timeoutTransport{next: rt, timeout: d} })
}

// TimeoutError is a request the API server did not answer in time.
type TimeoutError struct{ Timeout time.Duration }

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the API server did not answer within %s (is it reachable and healthy? --request-timeout sets the limit)", e.Timeout)
}

type timeoutTransport struct {
	next    http.RoundTripper
	timeout time.Duration
}

// WrappedRoundTripper lets client-go see the transport underneath.
func (t *timeoutTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

func (t *timeoutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	timeout := &TimeoutError{Timeout: t.timeout}
	timer := time.AfterFunc(t.timeout, func() { cancel(timeout) })
	stop := func() {
		timer.Stop()
		cancel(context.Canceled)
	}
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		stop()
		if context.Cause(ctx) == timeout {
			return nil, timeout
		}
		return nil, err
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// An upgraded connection (exec, port-forward) is the caller's to close; its body
		// must stay an io.ReadWriteCloser.
		timer.Stop()
		return resp, nil
	}
	if watches(req) {
		timer.Stop() // the server answered; the stream ends with the request's own context
	}
	resp.Body = &timeoutBody{ReadCloser: resp.Body, ctx: ctx, timeout: timeout, stop: stop}
	return resp, nil
}

// watches reports whether req is a watch or follows a log: long-running by design,
// bounded only until the server answers.
func watches(req *http.Request) bool {
	q := req.URL.Query()
	return q.Get("watch") == "true" || q.Get("watch") == "1" || q.Get("follow") == "true"
}

// timeoutBody ends the request's deadline when the body is closed, and names the
// timeout when it cut a read short.
type timeoutBody struct {
	io.ReadCloser
	ctx     context.Context
	timeout *TimeoutError
	once    sync.Once
	stop    func()
}

func (b *timeoutBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && context.Cause(b.ctx) == b.timeout {
		err = b.timeout
	}
	return n, err
}

func (b *timeoutBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.stop)
	return err
}
