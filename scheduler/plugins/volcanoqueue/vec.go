package volcanoqueue

import (
	"fmt"
	"math"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// vec is a resource vector over cpu (millicores), memory (bytes) and GPU (thousandths),
// in floating point as Volcano's api.Resource.
type vec [3]float64

// minResource is the difference Volcano's comparisons tolerate (api.minResource).
const minResource = 0.1

var unit = [3]string{"CPUs", "", "GPUs"}

func of(r *framework.Resources) vec {
	return vec{float64(r.MilliCPU), float64(r.Memory), float64(r.GPU)}
}

func (v vec) resources() framework.Resources {
	return framework.Resources{MilliCPU: int64(math.Round(v[0])), Memory: int64(math.Round(v[1])), GPU: int64(math.Round(v[2]))}
}

func (v vec) add(o vec) vec { return vec{v[0] + o[0], v[1] + o[1], v[2] + o[2]} }
func (v vec) sub(o vec) vec { return vec{v[0] - o[0], v[1] - o[1], v[2] - o[2]} }
func (v vec) scale(f float64) vec {
	return vec{v[0] * f, v[1] * f, v[2] * f}
}
func (v vec) min(o vec) vec { return vec{min(v[0], o[0]), min(v[1], o[1]), min(v[2], o[2])} }
func (v vec) max(o vec) vec { return vec{max(v[0], o[0]), max(v[1], o[1]), max(v[2], o[2])} }
func (v vec) atLeastZero() vec {
	return v.max(vec{})
}
func (v vec) empty() bool { return v[0] < minResource && v[1] < minResource && v[2] < minResource }

// lessEqual reports whether v is at most o in every dimension (Resource.LessEqual).
func (v vec) lessEqual(o vec) bool {
	for i := range v {
		if v[i] > o[i]+minResource {
			return false
		}
	}
	return true
}

// within reports whether v is at most o in every dimension that req asks for, and the
// first that is not (LessEqualWithDimension).
func (v vec) within(o, req vec) (int, bool) {
	for i := range v {
		if req[i] > 0 && v[i] > o[i]+minResource {
			return i, false
		}
	}
	return 0, true
}

// belowSome reports whether v is at most o in some dimension that req asks for
// (LessEqualPartlyWithDimensionZeroFiltered).
func (v vec) belowSome(o, req vec) bool {
	for i := range v {
		if req[i] > 0 && v[i] <= o[i]+minResource {
			return true
		}
	}
	return false
}

// aboveSome reports whether v exceeds o in some dimension that req holds
// (GreaterPartlyWithRelevantDimensions).
func (v vec) aboveSome(o, req vec) bool {
	for i := range v {
		if req[i] > 0 && v[i] > o[i]+minResource {
			return true
		}
	}
	return false
}

// shares reports whether v and o both hold some of one resource (api.Intersection).
func (v vec) shares(o vec) bool {
	for i := range v {
		if v[i] >= minResource && o[i] >= minResource {
			return true
		}
	}
	return false
}

// where is v in the dimensions o holds some of, 0 elsewhere.
func (v vec) where(o vec) vec {
	var out vec
	for i := range v {
		if o[i] >= minResource {
			out[i] = v[i]
		}
	}
	return out
}

// format prints one dimension in the unit people use for it.
func format(i int, v float64) string {
	switch i {
	case 0:
		return fmt.Sprintf("%g", v/1000)
	case 1:
		return fmt.Sprintf("%.0fMi", v/(1<<20))
	}
	return framework.FormatGPU(int64(math.Round(v)))
}
