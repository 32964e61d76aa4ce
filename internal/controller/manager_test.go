package controller

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// --profiling adds Go's /debug/pprof/ to the metrics endpoint, and nothing else does.
func TestProfilingServesPprof(t *testing.T) {
	if h := (Serving{}).MetricsServer().ExtraHandlers; len(h) != 0 {
		t.Fatalf("without --profiling: extra handlers %v", h)
	}
	h := (Serving{Profiling: true}).MetricsServer().ExtraHandlers["/debug/pprof/"]
	if h == nil {
		t.Fatal("with --profiling: no /debug/pprof/ handler")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pprof/heap?debug=1", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "heap profile") {
		t.Fatalf("/debug/pprof/heap: %d %.200s", rec.Code, rec.Body.String())
	}
}
