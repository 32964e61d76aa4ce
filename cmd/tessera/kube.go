package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler"
)

// restConfig loads the kubeconfig file, or $KUBECONFIG / the in-cluster config when
// path is empty.
func restConfig(path string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if path != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
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

// liveClient checks -o and returns a client of the cluster in kubeconfig and the
// scheduler configuration (--config, else the built-in --profile) for read-only commands.
func liveClient(kubeconfig, config, profile, output string) (client.Client, scheduler.Config, error) {
	if output != "text" && output != "json" {
		return nil, scheduler.Config{}, fmt.Errorf("-o %q: use text or json", output)
	}
	scfg, err := schedulerConfig(config, profile)
	if err != nil {
		return nil, scfg, err
	}
	c, err := kubeClient(kubeconfig)
	return c, scfg, err
}

// kubeClient is a client, with Tessera's kinds, of the cluster in kubeconfig.
func kubeClient(kubeconfig string) (client.Client, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// liveFlags declares the flags of liveClient.
func liveFlags(cmd *cobra.Command, kubeconfigHelp string, kubeconfig, config, profile, output *string) {
	fs := cmd.Flags()
	fs.StringVar(kubeconfig, "kubeconfig", "", kubeconfigHelp)
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

// daemonInputs is what the scheduler and the autoscaler read before they start: the
// klog logger (controller-runtime's too), the scheduler configuration (--config, else
// the built-in --profile), the client configuration and the scheme.
func daemonInputs(config, profile, kubeconfig string) (logr.Logger, scheduler.Config, *rest.Config, *runtime.Scheme, error) {
	log := klog.NewKlogr()
	ctrl.SetLogger(log)
	scfg, err := schedulerConfig(config, profile)
	if err != nil {
		return log, scfg, nil, nil, err
	}
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return log, scfg, nil, nil, err
	}
	scheme, err := newScheme()
	return log, scfg, cfg, scheme, err
}
