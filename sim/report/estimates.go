package report

import "math"

// RuntimeEstimates compares the runtime the scheduler expected of each job as it first
// started (its declared runtime or its class's history) with how long it really ran,
// which the scheduler never sees.
type RuntimeEstimates struct {
	// Jobs counts the jobs that started; Estimated those the scheduler had an
	// estimate for, and Overran those of them that ran longer than estimated.
	Jobs      int `json:"jobs"`
	Estimated int `json:"estimated"`
	Overran   int `json:"overran"`
	// AbsErrorSeconds and ErrorSeconds sum |estimate - runtime| and estimate - runtime
	// over the estimated jobs (ErrorSeconds > 0: estimates run long).
	AbsErrorSeconds float64 `json:"abs_error_seconds"`
	ErrorSeconds    float64 `json:"error_seconds"`
	// RuntimeSeconds sums the estimated jobs' runtimes, the denominator of RelError.
	RuntimeSeconds float64 `json:"runtime_seconds"`
}

// Add counts one started job: its estimate (0: none) and its true runtime.
func (e *RuntimeEstimates) Add(estimate, runtime float64) {
	e.Jobs++
	if estimate <= 0 {
		return
	}
	e.Estimated++
	if runtime > estimate {
		e.Overran++
	}
	e.AbsErrorSeconds += math.Abs(estimate - runtime)
	e.ErrorSeconds += estimate - runtime
	e.RuntimeSeconds += runtime
}

// RelError is the estimates' mean absolute error relative to the runtimes (0.2: off by
// a fifth on average).
func (e RuntimeEstimates) RelError() float64 {
	if e.RuntimeSeconds == 0 {
		return 0
	}
	return e.AbsErrorSeconds / e.RuntimeSeconds
}
