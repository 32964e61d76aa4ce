package testutil

import (
	"testing"
	"time"
)

// Within fails the test when f does not return within d: a bound for inputs that
// once hung, not a speed measurement. f keeps running in the background on failure.
func Within(t testing.TB, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("did not return within %s", d)
	}
}

// Seeds adds each text to a fuzz target's seed corpus.
func Seeds(f *testing.F, texts ...string) {
	for _, s := range texts {
		f.Add([]byte(s))
	}
}
