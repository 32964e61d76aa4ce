package trace

import (
	"maps"
	"slices"
	"strings"
)

// gpuModelMemoryMiB is the memory of one GPU of each known model, in MiB.
//
// The first nine rows are the values the FGD paper's simulator
// (github.com/hkust-adsl/kubernetes-scheduler-simulator) uses for the openb trace,
// so that Tessera's baselines are comparable: T4, V100M16, P100, A10, V100M32 and
// A100 are the usable memory NVML reports on those cards; G1, G2 and G3 are
// undisclosed models in the Alibaba trace with placeholder sizes.
//
// The rest are for user scenarios (YAML mode and the built-in scenarios): the
// memory NVML reports on each card.
var gpuModelMemoryMiB = map[string]int64{
	// FGD simulator values (openb trace).
	"T4":      15109,
	"V100M16": 16160,
	"P100":    16280,
	"A10":     22731,
	"V100M32": 32510,
	"A100":    81251,
	"G1":      10000,
	"G2":      20000,
	"G3":      30000,
	// User scenarios.
	"A100-80GB": 81920,
	"A100-40GB": 40960,
	"H100-80GB": 81559,
	"H200":      143771,
	"L40S":      46068,
}

// GPUModelMemoryMiB returns the memory of one GPU of the named model in MiB, and
// whether the model is known. Model names are case-sensitive, as in the trace.
func GPUModelMemoryMiB(model string) (int64, bool) {
	m, ok := gpuModelMemoryMiB[model]
	return m, ok
}

// GPUModelNames returns the known GPU model names, sorted.
func GPUModelNames() []string {
	return slices.Sorted(maps.Keys(gpuModelMemoryMiB))
}

// MilliToMiB converts a share of one GPU in thousandths (the trace's gpu_milli) into
// GPU memory in MiB on a GPU of the given model, rounding up so that a share never
// gets less memory than its fraction. It returns false for an unknown model.
func MilliToMiB(milli int64, model string) (int64, bool) {
	mem, ok := gpuModelMemoryMiB[model]
	if !ok {
		return 0, false
	}
	return (milli*mem + 999) / 1000, true
}

func knownModelsList() string { return strings.Join(GPUModelNames(), ", ") }
