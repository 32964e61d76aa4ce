//go:build faults

package failpoint

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Enabled says whether this build can fire fault points (built with -tags faults).
const Enabled = true

type armed struct {
	action Action
	left   int // fires left; < 0: unlimited
	text   string
}

var (
	mu     sync.Mutex
	points = map[Point]*armed{}
	stats  = map[Point]*Stats{}
)

func init() {
	if spec := os.Getenv("TESSERA_FAILPOINTS"); spec != "" {
		for _, term := range strings.Split(spec, ";") {
			name, action, ok := strings.Cut(strings.TrimSpace(term), "=")
			if term = strings.TrimSpace(term); term == "" {
				continue
			}
			if !ok {
				fatalf("TESSERA_FAILPOINTS: %q is not point=action", term)
			}
			if err := Arm(Point(name), action); err != nil {
				fatalf("TESSERA_FAILPOINTS: %v", err)
			}
		}
	}
	if addr := os.Getenv("TESSERA_FAILPOINTS_ADDR"); addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fatalf("TESSERA_FAILPOINTS_ADDR: %v", err)
		}
		go func() { _ = http.Serve(l, Handler()) }()
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "failpoint: "+format+"\n", args...)
	os.Exit(2)
}

// Arm sets point's action (see the package doc); "" or "off" disarms it.
func Arm(p Point, text string) error {
	known := false
	for _, q := range Points {
		known = known || q == p
	}
	if !known {
		return fmt.Errorf("unknown fault point %q", p)
	}
	mu.Lock()
	defer mu.Unlock()
	if text == "" || text == "off" {
		delete(points, p)
		return nil
	}
	a, n, err := ParseAction(text)
	if err != nil {
		return fmt.Errorf("fault point %s: %w", p, err)
	}
	points[p] = &armed{action: a, left: n, text: text}
	return nil
}

// Inject fires the point's action, if one is armed.
func Inject(p Point) error {
	mu.Lock()
	st := stats[p]
	if st == nil {
		st = &Stats{}
		stats[p] = st
	}
	st.Reached++
	a := points[p]
	if a == nil {
		mu.Unlock()
		return nil
	}
	st.Fired++
	if a.left > 0 {
		if a.left--; a.left == 0 {
			delete(points, p)
		}
	}
	action := a.action
	mu.Unlock()
	switch action.Kind {
	case Crash:
		fmt.Fprintf(os.Stderr, "failpoint %s: crash\n", p)
		os.Exit(CrashStatus)
	case Sleep:
		time.Sleep(action.Delay)
		return nil
	}
	return fmt.Errorf("failpoint %s: injected error", p)
}

// Snapshot returns every point's statistics.
func Snapshot() map[Point]Stats {
	mu.Lock()
	defer mu.Unlock()
	out := map[Point]Stats{}
	for _, p := range Points {
		var s Stats
		if st := stats[p]; st != nil {
			s = *st
		}
		if a := points[p]; a != nil {
			s.Action = a.text
		}
		out[p] = s
	}
	return out
}

// Handler serves the points over HTTP (see the package doc).
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := Point(strings.TrimPrefix(r.URL.Path, "/"))
		var err error
		switch {
		case r.Method == http.MethodGet && p == "":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(Snapshot())
			return
		case r.Method == http.MethodPut:
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<10))
			err = Arm(p, strings.TrimSpace(string(body)))
		case r.Method == http.MethodDelete:
			err = Arm(p, "off")
		default:
			http.Error(w, "GET /, PUT /<point> with an action, or DELETE /<point>", http.StatusMethodNotAllowed)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
