package failpoint

import (
	"testing"
	"time"
)

func TestParseAction(t *testing.T) {
	for _, c := range []struct {
		text  string
		want  Action
		count int
		bad   bool
	}{
		{text: "crash", want: Action{Kind: Crash}, count: -1},
		{text: "2*error", want: Action{Kind: Error}, count: 2},
		{text: "1*sleep(1.5s)", want: Action{Kind: Sleep, Delay: 1500 * time.Millisecond}, count: 1},
		{text: "0*crash", bad: true},
		{text: "sleep(soon)", bad: true},
		{text: "panic", bad: true},
	} {
		a, n, err := ParseAction(c.text)
		if c.bad {
			if err == nil {
				t.Errorf("%q: no error", c.text)
			}
			continue
		}
		if err != nil || a != c.want || n != c.count {
			t.Errorf("%q: %+v %d %v; want %+v %d", c.text, a, n, err, c.want, c.count)
		}
	}
}

func TestPointComponents(t *testing.T) {
	seen := map[Point]bool{}
	for _, p := range Points {
		if seen[p] {
			t.Errorf("%s listed twice", p)
		}
		seen[p] = true
		switch p.Component() {
		case "scheduler", "webhook", "autoscaler", "node-agent":
		default:
			t.Errorf("%s: component %q", p, p.Component())
		}
	}
}
