package policy

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// DefaultTimeout bounds one evaluation of a request against the whole set.
const DefaultTimeout = 500 * time.Millisecond

// Engine is the OPA Evaluator. Load compiles and tests a set and swaps it in
// atomically; evaluations in flight finish on the set they started with.
type Engine struct {
	current atomic.Pointer[Compiled]
	timeout time.Duration
	metrics *Metrics
}

var _ Evaluator = (*Engine)(nil)

// NewEngine returns an engine with no set loaded. timeout <= 0 means DefaultTimeout;
// metrics may be nil.
func NewEngine(timeout time.Duration, metrics *Metrics) *Engine {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Engine{timeout: timeout, metrics: metrics}
}

// Check compiles set and runs its tests without serving it.
func (e *Engine) Check(ctx context.Context, set Set) (*Compiled, error) {
	c, err := Compile(ctx, set, e.metrics)
	if err != nil {
		return nil, err
	}
	results, err := c.Test(ctx)
	if err != nil {
		e.metrics.compileFailed()
		return nil, err
	}
	if failed := Failures(results); len(failed) > 0 {
		e.metrics.compileFailed()
		return nil, &CompileError{Errors: capErrors(failed)}
	}
	return c, nil
}

// Load checks set and, when it compiles and its tests pass, serves it. On error the
// previous set keeps serving.
func (e *Engine) Load(ctx context.Context, set Set) (*Compiled, error) {
	c, err := e.Check(ctx, set)
	if err != nil {
		return nil, err
	}
	e.Swap(c)
	return c, nil
}

// Swap serves c from now on.
func (e *Engine) Swap(c *Compiled) { e.current.Store(c) }

// Version implements Evaluator.
func (e *Engine) Version() string {
	if c := e.current.Load(); c != nil {
		return c.version
	}
	return ""
}

// ErrNoPolicies is returned by Evaluate before a set was loaded.
var ErrNoPolicies = errors.New("no policy set loaded yet")

// Evaluate implements Evaluator under the engine's deadline.
func (e *Engine) Evaluate(ctx context.Context, in Input) (Decision, error) {
	c := e.current.Load()
	if c == nil {
		return Decision{}, ErrNoPolicies
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	return c.Evaluate(ctx, in)
}
