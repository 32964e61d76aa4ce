package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
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
