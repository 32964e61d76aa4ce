package framework

import "slices"

// FitsGPU reports whether GPU g can take one of t's GPUs.
func FitsGPU(r *GPURequest, g *GPU) bool {
	return g.Healthy && r.AllowsModel(g.Model) && r.AllowsDevice(g) && r.MilliOn(g) <= g.FreeMilli()
}

// PickWholeGPUs chooses r.Count completely free GPUs, preferring GPUs of one NVLink
// island, then of one NUMA node, then the lowest indices. It returns 0 when the node
// has too few free GPUs.
func PickWholeGPUs(r *GPURequest, n *Node) GPUSet {
	if n.freeWhole < r.Count {
		return 0
	}
	var free GPUSet
	for i := range n.GPUs {
		g := &n.GPUs[i]
		if g.Healthy && g.UsedMilli == 0 && r.AllowsModel(g.Model) && r.AllowsDevice(g) {
			free = free.Add(i)
		}
	}
	if free.Len() < r.Count {
		return 0
	}
	if c := r.Claim; c != nil && (c.Match != nil || c.Distinct != nil) {
		return pickConstrained(r, n, free)
	}
	if free.Len() == r.Count || r.Count == 1 {
		return firstN(free, r.Count)
	}
	// Smallest island (then NUMA node) that holds the whole request keeps larger groups
	// free for larger requests.
	if s := pickGroup(n, free, r.Count, func(g *GPU) int { return g.Island }); s != 0 {
		return s
	}
	if s := pickGroup(n, free, r.Count, func(g *GPU) int { return g.NUMA }); s != 0 {
		return s
	}
	return firstN(free, r.Count)
}

// pickConstrained picks for a claim's constraints: all GPUs from one value of the
// matchAttribute constraints (the smallest group that holds the request), each with a
// value of every distinctAttribute constraint that no other picked GPU has (the lowest
// indices first).
func pickConstrained(r *GPURequest, n *Node, free GPUSet) GPUSet {
	c := r.Claim
	if c.Distinct == nil {
		return pickGroup(n, free, r.Count, func(g *GPU) string { return c.Match[g.UUID] })
	}
	groups := []GPUSet{free}
	if c.Match != nil {
		groups = groups[:0]
		byValue := map[string]GPUSet{}
		var order []string
		for _, i := range free.Indices() {
			v := c.Match[n.GPUs[i].UUID]
			if _, ok := byValue[v]; !ok {
				order = append(order, v)
			}
			byValue[v] = byValue[v].Add(i)
		}
		// The smallest groups first, as pickGroup.
		slices.SortStableFunc(order, func(a, b string) int { return byValue[a].Len() - byValue[b].Len() })
		for _, v := range order {
			groups = append(groups, byValue[v])
		}
	}
	for _, g := range groups {
		var picked GPUSet
		for _, i := range g.Indices() {
			if picked.Len() == r.Count {
				break
			}
			if r.Matches(n, picked.Add(i)) {
				picked = picked.Add(i)
			}
		}
		if picked.Len() == r.Count {
			return picked
		}
	}
	return 0
}

func pickGroup[K comparable](n *Node, free GPUSet, count int, key func(*GPU) K) GPUSet {
	var best GPUSet
	bestLen := 1 << 30
	seen := map[K]bool{}
	for _, i := range free.Indices() {
		k := key(&n.GPUs[i])
		if seen[k] {
			continue
		}
		seen[k] = true
		var s GPUSet
		for _, j := range free.Indices() {
			if key(&n.GPUs[j]) == k {
				s = s.Add(j)
			}
		}
		if l := s.Len(); l >= count && l < bestLen {
			best, bestLen = firstN(s, count), l
		}
	}
	return best
}

func firstN(s GPUSet, n int) GPUSet {
	var out GPUSet
	for v := uint64(s); v != 0 && n > 0; v &= v - 1 {
		out = out.Add(trailingZeros(v))
		n--
	}
	return out
}

// PickShareBestFit puts a share on the GPU with the least free share that still fits
// (lowest index on ties), keeping free GPUs whole for whole-GPU tasks.
func PickShareBestFit(r *GPURequest, n *Node) GPUSet {
	best, bestFree := -1, int64(1<<62)
	for i := range n.GPUs {
		g := &n.GPUs[i]
		if !FitsGPU(r, g) {
			continue
		}
		if f := g.FreeMilli(); f < bestFree {
			best, bestFree = i, f
		}
	}
	if best < 0 {
		return 0
	}
	return GPUSet(0).Add(best)
}

// PickGPUs is the default GPU choice: whole GPUs by island, shares by best fit; for a
// firstAvailable request, from its first alternative the node can serve.
func PickGPUs(r *GPURequest, n *Node) GPUSet {
	if r.Claim != nil && r.Claim.Alternatives != nil {
		_, gpus := r.firstAlternative(n)
		return gpus
	}
	if r.Count > 0 {
		return PickWholeGPUs(r, n)
	}
	if r.Shared() {
		return PickShareBestFit(r, n)
	}
	return 0
}

// PickGPUsTotal is PickGPUs for a whole task: the GPUs (none for CPU-only tasks), the
// milli-GPUs they take in total, and false when a GPU task finds no GPUs on the node.
func PickGPUsTotal(t *Task, n *Node) (GPUSet, int64, bool) {
	if !t.GPU.Any() {
		return 0, 0, true
	}
	gpus := PickGPUs(&t.GPU, n)
	if gpus == 0 {
		return 0, 0, false
	}
	return gpus, int64(gpus.Len()) * t.GPU.MilliOn(&n.GPUs[gpus.Indices()[0]]), true
}
