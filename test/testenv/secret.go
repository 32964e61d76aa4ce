package testenv

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MountSecret copies the Secret's tls.crt and tls.key into dir until ctx ends, as the
// kubelet does for a Secret volume: each file is replaced atomically when it changes.
func MountSecret(ctx context.Context, c client.Client, key client.ObjectKey, dir string) {
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			var s corev1.Secret
			if c.Get(ctx, key, &s) == nil {
				for _, k := range []string{"tls.key", "tls.crt"} {
					path := filepath.Join(dir, k)
					if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, s.Data[k]) || len(s.Data[k]) == 0 {
						continue
					}
					if os.WriteFile(path+".tmp", s.Data[k], 0o600) == nil {
						_ = os.Rename(path+".tmp", path)
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}
