package capi

import "context"

// WithServed makes d look Cluster API up through served, for the tests.
func (d *Discovering) WithServed(served func(ctx context.Context) (*Provider, error)) *Discovering {
	d.served = served
	return d
}
