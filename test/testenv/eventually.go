package testenv

import (
	"testing"
	"time"
)

// Eventually polls cond every 50ms until it returns "" or d passes, and then fails the
// test with what and cond's last message.
func Eventually(t testing.TB, what string, d time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	msg := ""
	for time.Now().Before(deadline) {
		if msg = cond(); msg == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: %s", what, msg)
}
