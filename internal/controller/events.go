package controller

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
)

// eventRepeat is how often the same event on the same object is recorded again.
const eventRepeat = 5 * time.Minute

// EventSink records events on objects, at most once per eventRepeat for the same
// object, reason and message, so that a pod pending for hours does not flood the API.
// It is safe for concurrent use.
type EventSink struct {
	rec events.EventRecorder
	now func() time.Time

	mu   sync.Mutex
	last map[eventKey]time.Time
}

type eventKey struct {
	uid     types.UID
	reason  string
	message string
}

// NewEventSink records through rec (nil: records nothing) with the clock now.
func NewEventSink(rec events.EventRecorder, now func() time.Time) *EventSink {
	return &EventSink{rec: rec, now: now, last: map[eventKey]time.Time{}}
}

// Normal records a Normal event on obj.
func (s *EventSink) Normal(obj runtime.Object, reason, action, format string, args ...any) {
	s.record(obj, corev1.EventTypeNormal, reason, action, fmt.Sprintf(format, args...))
}

// Warn records a Warning event on obj.
func (s *EventSink) Warn(obj runtime.Object, reason, action, format string, args ...any) {
	s.record(obj, corev1.EventTypeWarning, reason, action, fmt.Sprintf(format, args...))
}

func (s *EventSink) record(obj runtime.Object, typ, reason, action, msg string) {
	if s == nil || s.rec == nil {
		return
	}
	var uid types.UID
	if o, ok := obj.(interface{ GetUID() types.UID }); ok {
		uid = o.GetUID()
	}
	k, now := eventKey{uid, reason, msg}, s.now()
	s.mu.Lock()
	if t, ok := s.last[k]; ok && now.Sub(t) < eventRepeat {
		s.mu.Unlock()
		return
	}
	s.last[k] = now
	if len(s.last) > 100000 { // forget old entries rather than grow without bound
		for k, t := range s.last {
			if now.Sub(t) >= eventRepeat {
				delete(s.last, k)
			}
		}
	}
	s.mu.Unlock()
	s.rec.Eventf(obj, nil, typ, reason, action, "%s", msg)
}
