package autoscaletest

import (
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Recorder keeps events as "Reason name: message" lines; it is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	lines []string
}

// Eventf records an event about regarding (events.EventRecorder).
func (r *Recorder) Eventf(regarding runtime.Object, _ runtime.Object, _, reason, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := ""
	if o, ok := regarding.(metav1.Object); ok {
		name = o.GetName()
	}
	r.lines = append(r.lines, reason+" "+name+": "+fmt.Sprintf(note, args...))
}

// Has reports whether a recorded line contains substr.
func (r *Recorder) Has(substr string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lines {
		if strings.Contains(l, substr) {
			return true
		}
	}
	return false
}

// String is every line, one per line.
func (r *Recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}
