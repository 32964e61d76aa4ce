package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/cli"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
	"github.com/tessera-gpu/tessera/scheduler"
)

// checks joins the errors of flag checks: every problem at once.
func checks(errs ...error) error { return errors.Join(errs...) }

// positive checks a duration flag that must be above zero.
func positive(flag string, d time.Duration, example string) error {
	if d <= 0 {
		return fmt.Errorf("--%s %s: must be positive (for example --%s=%s)", flag, d, flag, example)
	}
	return nil
}

// atLeast checks an integer flag's lower bound.
func atLeast(flag string, n, least int, why string) error {
	if n < least {
		return fmt.Errorf("--%s %d: must be %d or more (%s)", flag, n, least, why)
	}
	return nil
}

// restConfig is the client configuration of kube's --kubeconfig ($KUBECONFIG,
// ~/.kube/config or in-cluster when empty) with its --request-timeout. It reads files
// only and connects to nothing.
func restConfig(kube kubeclient.Options) (*rest.Config, error) {
	if err := kube.Validate(); err != nil {
		return nil, err
	}
	return kube.Config()
}

// newScheme knows the built-in kinds and Tessera's.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := tesserav1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}

// liveClient checks -o and returns a client of the cluster in kube and the scheduler
// configuration (--config, else the built-in --profile) for read-only commands. Its
// errors are unusable input (exit code 2): it connects to nothing.
func liveClient(kube kubeclient.Options, config, profile, output string) (client.Client, scheduler.Config, error) {
	if output != "text" && output != "json" {
		return nil, scheduler.Config{}, cli.Usage(fmt.Errorf("-o %q: use text or json", output))
	}
	scfg, err := schedulerConfig(config, profile)
	if err != nil {
		return nil, scfg, cli.Usage(err)
	}
	c, err := kubeClient(kube)
	return c, scfg, err
}

// kubeClient is a client, with Tessera's kinds, of the cluster in kube; an error is
// unusable input (exit code 2): it connects to nothing.
func kubeClient(kube kubeclient.Options) (client.Client, error) {
	cfg, err := restConfig(kube)
	if err != nil {
		return nil, cli.Usage(err)
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// liveFlags declares the flags of liveClient.
func liveFlags(cmd *cobra.Command, kubeconfigHelp string, kube *kubeclient.Options, config, profile, output *string) {
	fs := cmd.Flags()
	kube.AddFlags(fs, kubeconfigHelp)
	fs.StringVar(config, "config", "", "scheduler configuration the cluster's scheduler runs; empty: --profile")
	profileFlag(cmd, profile, "tessera", "built-in scheduler profile used when --config is empty: "+strings.Join(scheduler.ProfileNames(), ", "))
	fs.StringVarP(output, "output", "o", "text", "text or json")
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// daemonInputs is what the scheduler and the autoscaler read before they start, once
// their flags are checked (flagErr, joined with any error here): the scheduler
// configuration (--config, else the built-in --profile), the klog logger
// (controller-runtime's too), the client configuration and the scheme.
func daemonInputs(flagErr error, config, profile string, kube kubeclient.Options) (scheduler.Config, logr.Logger, *rest.Config, *runtime.Scheme, error) {
	log := klog.NewKlogr()
	scfg, err := schedulerConfig(config, profile)
	if err == nil {
		if _, err = scheduler.New(scfg); err != nil {
			err = fmt.Errorf("scheduler configuration: %w", err)
		}
	}
	if err := checks(flagErr, err); err != nil {
		return scfg, log, nil, nil, err
	}
	ctrl.SetLogger(log)
	cfg, err := restConfig(kube)
	if err != nil {
		return scfg, log, nil, nil, err
	}
	scheme, err := newScheme()
	return scfg, log, cfg, scheme, err
}
