package testutil

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// State prints the snapshot and each of its nodes, jobs, tasks and queues one field a
// line, every field (unexported ones too) read through reflection, so that comparing
// two states misses no field, including one added later. Pointers between these
// objects print as names (Describe). skip leaves out fields of the snapshot's object
// types, named "Type.Field" ("Node.Version").
func State(s *framework.Snapshot, skip ...string) string {
	var b strings.Builder
	object := func(prefix string, v reflect.Value) {
		v = reflect.Indirect(v)
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if slices.Contains(skip, t.Name()+"."+f.Name) {
				continue
			}
			fmt.Fprintf(&b, "%s.%s = %s\n", prefix, f.Name, Describe(v.Field(i)))
		}
	}
	object("snapshot", reflect.ValueOf(s))
	for _, n := range s.Nodes {
		object("node "+n.Name, reflect.ValueOf(n))
	}
	for _, j := range s.Jobs {
		object("job "+j.Key(), reflect.ValueOf(j))
		for _, t := range j.Tasks {
			object("task "+t.Key(), reflect.ValueOf(t))
		}
	}
	for _, q := range s.Queues {
		object("queue "+q.Name, reflect.ValueOf(q))
	}
	return b.String()
}

var (
	graphNames = map[reflect.Type]string{
		reflect.TypeFor[*framework.Node](): "node", reflect.TypeFor[*framework.Task](): "task",
		reflect.TypeFor[*framework.Job](): "job", reflect.TypeFor[*framework.Queue](): "queue",
	}
	timeType = reflect.TypeFor[time.Time]()
)

// Describe prints v and everything it reaches, read through reflection (unexported
// fields too): maps in key order, nil apart from empty. A pointer to a Node, Task, Job
// or Queue prints as the object's kind and name ("task ns/a"), not its contents, so
// that the objects of a snapshot, which point to each other, print one at a time.
func Describe(v reflect.Value) string {
	var b strings.Builder
	describe(&b, v, 0)
	return b.String()
}

func describe(b *strings.Builder, v reflect.Value, depth int) {
	if depth > 64 {
		b.WriteString("…")
		return
	}
	switch v.Kind() {
	case reflect.Invalid:
		b.WriteString("<invalid>")
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		b.WriteString(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case reflect.Complex64, reflect.Complex128:
		b.WriteString(strconv.FormatComplex(v.Complex(), 'g', -1, 128))
	case reflect.String:
		b.WriteString(strconv.Quote(v.String()))
	case reflect.Pointer:
		switch kind, graph := graphNames[v.Type()]; {
		case v.IsNil():
			b.WriteString("nil")
		case graph:
			e := v.Elem()
			name := e.FieldByName("Name").String()
			if ns := e.FieldByName("Namespace"); ns.IsValid() {
				name = ns.String() + "/" + name
			}
			fmt.Fprintf(b, "%s %s", kind, name)
		default:
			b.WriteString("&")
			describe(b, v.Elem(), depth+1)
		}
	case reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		fmt.Fprintf(b, "%s(", v.Elem().Type())
		describe(b, v.Elem(), depth+1)
		b.WriteString(")")
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteString("[")
		for i := range v.Len() {
			if i > 0 {
				b.WriteString(" ")
			}
			describe(b, v.Index(i), depth+1)
		}
		b.WriteString("]")
	case reflect.Map:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		entries := make([]string, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			entries = append(entries, Describe(it.Key())+":"+Describe(it.Value()))
		}
		slices.Sort(entries)
		b.WriteString("map[" + strings.Join(entries, " ") + "]")
	case reflect.Struct:
		if v.Type() == timeType && v.CanInterface() {
			b.WriteString(v.Interface().(time.Time).String())
			return
		}
		b.WriteString("{")
		for i := range v.NumField() {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(v.Type().Field(i).Name + ":")
			describe(b, v.Field(i), depth+1)
		}
		b.WriteString("}")
	default: // func, chan, unsafe pointer: identity
		fmt.Fprintf(b, "%s %#x", v.Type(), v.Pointer())
	}
}
