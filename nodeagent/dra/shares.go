package dra

import (
	resourceapi "k8s.io/api/resource/v1"
)

// Share is a claim's share of one of the node's GPUs: the memory allocated to it (what
// the scheduler packed) and its limit (what the container may use, the claim's
// GPUShareConfig memoryLimit, else the share itself).
type Share struct {
	UUID                 string
	RequestMiB, LimitMiB int64
}

// Shares are the memory shares claim c holds on this node's GPUs; whole GPUs and other
// drivers' or nodes' devices are left out, and so is a result whose configuration does
// not parse (its prepare is refused).
func (d *Driver) Shares(c *resourceapi.ResourceClaim) []Share {
	if c.Status.Allocation == nil {
		return nil
	}
	d.mu.Lock()
	gpus := d.gpus
	d.mu.Unlock()
	var out []Share
	for _, r := range c.Status.Allocation.Devices.Results {
		g, ok := gpus[r.Device]
		if r.Driver != DriverName || r.Pool != d.opts.NodeName || !ok {
			continue
		}
		mib, share := d.share(g, r)
		if !share || mib >= g.MemoryMiB && r.ShareID == nil {
			continue
		}
		limit, err := shareLimitMiB(c.Status.Allocation.Devices.Config, r.Request)
		if err != nil {
			continue
		}
		out = append(out, Share{UUID: g.UUID, RequestMiB: mib, LimitMiB: max(limit, mib)})
	}
	return out
}
