package failpoint

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind is what an armed point does when reached.
type Kind int

// The kinds of action.
const (
	Error Kind = iota
	Crash
	Sleep
)

// Action is a parsed action.
type Action struct {
	Kind  Kind
	Delay time.Duration // Sleep's
}

// ParseAction reads "[N*]crash", "[N*]error" or "[N*]sleep(D)"; count is N, or -1 for
// no count (fire every time).
func ParseAction(text string) (a Action, count int, err error) {
	count = -1
	if n, rest, ok := strings.Cut(text, "*"); ok {
		if count, err = strconv.Atoi(n); err != nil || count < 1 {
			return a, 0, fmt.Errorf("action %q: the count before * must be a positive number", text)
		}
		text = rest
	}
	switch {
	case text == "crash":
		a.Kind = Crash
	case text == "error":
		a.Kind = Error
	case strings.HasPrefix(text, "sleep(") && strings.HasSuffix(text, ")"):
		a.Kind = Sleep
		if a.Delay, err = time.ParseDuration(text[len("sleep(") : len(text)-1]); err != nil || a.Delay <= 0 {
			return a, 0, fmt.Errorf("action %q: sleep takes a positive Go duration, as sleep(3s)", text)
		}
	default:
		return a, 0, fmt.Errorf("action %q: want crash, error or sleep(D), optionally after N*", text)
	}
	return a, count, nil
}
