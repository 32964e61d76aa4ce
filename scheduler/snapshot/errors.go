package snapshot

import "fmt"

// ObjectError is a problem with one object: the object is left out of the snapshot (or,
// for annotations and queue parents, the faulty value is ignored) and the rest is built.
type ObjectError struct {
	// Kind is the object's kind: Node, GPUNode, Queue, PodGroup, Job or Pod.
	Kind      string
	Namespace string
	Name      string
	// Field is the path of the faulty field, e.g. spec.containers[0].resources.requests[tessera.dev/gpu].
	Field string
	// Message says what is wrong and how to fix it.
	Message string
}

func (e *ObjectError) Error() string {
	key := e.Name
	if e.Namespace != "" {
		key = e.Namespace + "/" + e.Name
	}
	if e.Field == "" {
		return fmt.Sprintf("%s %s: %s", e.Kind, key, e.Message)
	}
	return fmt.Sprintf("%s %s: %s: %s", e.Kind, key, e.Field, e.Message)
}

func objErr(kind, ns, name, field, format string, args ...any) *ObjectError {
	return &ObjectError{Kind: kind, Namespace: ns, Name: name, Field: field, Message: fmt.Sprintf(format, args...)}
}
