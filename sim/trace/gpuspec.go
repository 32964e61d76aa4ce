package trace

import "math"

// WithGPUSpec returns a copy of pods in which share of the GPU pods (rounded, chosen
// uniformly with NewRand(seed)) carry a GPU model constraint and the others none, the
// way the openb gpuspec lists constrain the default list: each chosen pod draws the
// constraint of a constrained pod of like of its kind (a share of one GPU, one whole
// GPU, several GPUs), or of any kind when like has none of its kind.
func WithGPUSpec(pods, like []PodSpec, share float64, seed int64) []PodSpec {
	kind := func(p *PodSpec) int {
		switch {
		case p.IsShare():
			return 0
		case p.NumGPU == 1:
			return 1
		}
		return 2
	}
	var specs [3][][]string
	var all [][]string
	for i := range like {
		if p := &like[i]; p.NumGPU > 0 && p.GPUModels != nil {
			specs[kind(p)] = append(specs[kind(p)], p.GPUModels)
			all = append(all, p.GPUModels)
		}
	}
	out := make([]PodSpec, len(pods))
	var gpu []int
	for i, p := range pods {
		p.GPUModels = nil
		out[i] = p
		if p.NumGPU > 0 {
			gpu = append(gpu, i)
		}
	}
	if len(all) == 0 {
		return out
	}
	rng := NewRand(seed)
	rng.Shuffle(len(gpu), func(i, j int) { gpu[i], gpu[j] = gpu[j], gpu[i] })
	for _, i := range gpu[:int(math.Round(share*float64(len(gpu))))] {
		from := specs[kind(&out[i])]
		if len(from) == 0 {
			from = all
		}
		out[i].GPUModels = from[rng.IntN(len(from))]
	}
	return out
}
