package framework_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// checkpointTypes are the types whose fields checkpointFields covers.
var checkpointTypes = []reflect.Type{
	reflect.TypeFor[framework.Snapshot](), reflect.TypeFor[framework.Node](), reflect.TypeFor[framework.Task](),
	reflect.TypeFor[framework.Job](), reflect.TypeFor[framework.Queue](),
}

// TestCheckpointFieldsComplete fails when a field of Snapshot, Node, Task, Job or Queue
// is missing from checkpointFields, so that a new field sessions change is never left
// out of Checkpoint unnoticed, and when the list names a field that is gone.
func TestCheckpointFieldsComplete(t *testing.T) {
	known := map[string]bool{}
	for _, typ := range checkpointTypes {
		known[typ.Name()] = true
		rules := framework.CheckpointFields[typ.Name()]
		fields := map[string]bool{}
		for i := range typ.NumField() {
			f := typ.Field(i)
			fields[f.Name] = true
			if _, ok := rules[f.Name]; !ok {
				t.Errorf("%s.%s is not in checkpointFields (checkpoint.go): restore it in Checkpoint and mark it restored, "+
					"or mark it immutable if no session or what-if change ever alters it", typ.Name(), f.Name)
			}
		}
		for f := range rules {
			if !fields[f] {
				t.Errorf("checkpointFields names %s.%s, which does not exist", typ.Name(), f)
			}
		}
	}
	for name := range framework.CheckpointFields {
		if !known[name] {
			t.Errorf("checkpointFields names type %s, which this test does not check", name)
		}
	}
}

// TestCheckpointRestoresEveryField checkpoints random snapshots, then changes every
// field that checkpointFields does not declare immutable or cached: for a restored
// field first what it holds in place (map entries, slice elements, struct fields),
// then the field itself; a reassigned field by assignment only; a renewed one (the
// node version) upwards, as sessions do. restore must put every field of every object
// back as it was, read deeply through reflection, and move each node's version past
// every value it had.
func TestCheckpointRestoresEveryField(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 0xc4ec))
		snap, objects := randomSnapshot(rng)
		before := fieldStates(objects)
		restore := snap.Checkpoint()
		m := &mutator{rng: rng, graph: intruders()}
		for round := range 2 { // restore, like the state it saves, must survive a second change
			changeAndRestore(t, fmt.Sprintf("seed %d round %d", seed, round), m, objects, restore, before)
		}
	}
}

// changeAndRestore changes every field of the objects that Checkpoint saves, calls
// restore and checks that every field is back as in before.
func changeAndRestore(t *testing.T, label string, m *mutator, objects []object, restore func(), before map[string]string) {
	t.Helper()
	changed := map[string]uint64{} // node versions after the change
	for _, o := range objects {
		forFields(o, func(key string, f reflect.Value, rule framework.CheckpointRule) {
			old := testutil.Describe(f)
			switch rule {
			case framework.RuleImmutable, framework.RuleCached:
				return
			case framework.RuleRestored:
				m.inPlace(f)
				m.assign(f)
			case framework.RuleReassigned:
				m.assign(f)
			case framework.RuleRenewed:
				f.SetUint(f.Uint() + 1 + m.rng.Uint64N(5))
				changed[key] = f.Uint()
			}
			if testutil.Describe(f) == old {
				t.Fatalf("%s: the test did not change %s", label, key)
			}
		})
	}

	restore()
	after := fieldStates(objects)
	for _, o := range objects {
		forFields(o, func(key string, f reflect.Value, rule framework.CheckpointRule) {
			if rule == framework.RuleRenewed {
				if f.Uint() <= changed[key] {
					t.Errorf("%s: %s is %d after restore, not past %d, a value it had during the change", label, key, f.Uint(), changed[key])
				}
				return
			}
			if after[key] != before[key] {
				t.Errorf("%s: %s (%v) not restored:\n got  %s\n want %s", label, key, ruleName(rule), after[key], before[key])
			}
		})
	}
}

func ruleName(r framework.CheckpointRule) string {
	return map[framework.CheckpointRule]string{framework.RuleImmutable: "immutable", framework.RuleCached: "cached",
		framework.RuleRestored: "restored", framework.RuleReassigned: "reassigned", framework.RuleRenewed: "renewed"}[r]
}

// object is a struct of the snapshot (the snapshot itself, a node, task, job or queue)
// and its name in messages.
type object struct {
	name string
	v    reflect.Value // the struct, addressable
}

// forFields calls f for each field of o, made settable, with its checkpoint rule.
func forFields(o object, f func(key string, field reflect.Value, rule framework.CheckpointRule)) {
	typ := o.v.Type()
	rules := framework.CheckpointFields[typ.Name()]
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		rule, ok := rules[name]
		if !ok {
			panic(fmt.Sprintf("%s.%s has no checkpoint rule (see TestCheckpointFieldsComplete)", typ.Name(), name))
		}
		f(o.name+"."+name, settable(o.v.Field(i)), rule)
	}
}

// fieldStates describes every field of every object.
func fieldStates(objects []object) map[string]string {
	out := map[string]string{}
	for _, o := range objects {
		forFields(o, func(key string, f reflect.Value, _ framework.CheckpointRule) { out[key] = testutil.Describe(f) })
	}
	return out
}

// randomSnapshot builds a snapshot of a few nodes, jobs and queues and gives every
// field that Checkpoint saves a random value. The lists through which Checkpoint finds
// the objects (the snapshot's nodes, jobs and queues, a job's tasks) keep every
// object; pointers between objects point to objects of the snapshot.
func randomSnapshot(rng *rand.Rand) (*framework.Snapshot, []object) {
	root := testutil.MakeQueue("root").Obj()
	queues := []*framework.Queue{root, testutil.MakeQueue("a").Parent(root).Obj(), testutil.MakeQueue("b").Parent(root).Obj()}
	var nodes []*framework.Node
	for i := range 2 + rng.IntN(4) {
		nodes = append(nodes, testutil.MakeNode(fmt.Sprintf("n%d", i)).GPUs(1+rng.IntN(8), "A100-80GB").CPU(64000).Memory(256<<30).
			Label("tessera.dev/rack", fmt.Sprintf("r%d", i%2)).Obj())
	}
	var jobs []*framework.Job
	for i := range 2 + rng.IntN(4) {
		jobs = append(jobs, testutil.MakeJob(fmt.Sprintf("j%d", i)).Tasks(1+rng.IntN(3)).GPU(1).Queue(queues[1+i%2]).Obj())
	}
	snap := testutil.Snapshot(time.Hour, nodes, jobs, queues...)

	objects := []object{{"snapshot", reflect.ValueOf(snap).Elem()}}
	pick := map[reflect.Type]func() reflect.Value{}
	add := func(list any) {
		l := reflect.ValueOf(list)
		for i := range l.Len() {
			p := l.Index(i)
			objects = append(objects, object{testutil.Describe(p), p.Elem()})
		}
		pick[l.Type().Elem()] = func() reflect.Value { return l.Index(rng.IntN(l.Len())) }
	}
	var tasks []*framework.Task
	for _, j := range jobs {
		tasks = append(tasks, j.Tasks...)
	}
	add(nodes)
	add(jobs)
	add(tasks)
	add(queues)

	keep := map[string]bool{"snapshot.Nodes": true, "snapshot.Jobs": true, "snapshot.Queues": true}
	for _, j := range jobs {
		keep["job "+j.Key()+".Tasks"] = true
	}
	m := &mutator{rng: rng, graph: pick}
	for _, o := range objects {
		forFields(o, func(key string, f reflect.Value, rule framework.CheckpointRule) {
			if rule != framework.RuleImmutable && rule != framework.RuleCached && !keep[key] {
				f.Set(m.fresh(f.Type()))
			}
		})
	}
	for _, n := range nodes {
		n.Refresh() // restore recomputes the GPU summaries; start from consistent ones
	}
	return snap, objects
}

// intruders makes new nodes, tasks, jobs and queues, for pointers a change sets.
func intruders() map[reflect.Type]func() reflect.Value {
	k := 0
	name := func() string { k++; return fmt.Sprintf("intruder-%d", k) }
	return map[reflect.Type]func() reflect.Value{
		reflect.TypeFor[*framework.Node]():  func() reflect.Value { return reflect.ValueOf(&framework.Node{Name: name()}) },
		reflect.TypeFor[*framework.Task]():  func() reflect.Value { return reflect.ValueOf(&framework.Task{Name: name(), Namespace: "x"}) },
		reflect.TypeFor[*framework.Job]():   func() reflect.Value { return reflect.ValueOf(&framework.Job{Name: name(), Namespace: "x"}) },
		reflect.TypeFor[*framework.Queue](): func() reflect.Value { return reflect.ValueOf(&framework.Queue{Name: name()}) },
	}
}

// mutator makes random values and changes values in place.
type mutator struct {
	rng *rand.Rand
	// graph gives a value for a pointer to a node, task, job or queue.
	graph map[reflect.Type]func() reflect.Value
}

var (
	timeType       = reflect.TypeFor[time.Time]()
	taskStatusType = reflect.TypeFor[framework.TaskStatus]()
)

// fresh returns a new random value of type t that shares nothing with existing values
// (but nodes, tasks, jobs and queues, which come from graph).
func (m *mutator) fresh(t reflect.Type) reflect.Value {
	if g, ok := m.graph[t]; ok {
		return g()
	}
	switch t {
	case timeType:
		return reflect.ValueOf(testutil.Epoch.Add(time.Duration(m.rng.IntN(1e6)) * time.Second))
	case taskStatusType:
		return reflect.ValueOf(framework.TaskStatus(m.rng.IntN(5)))
	}
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(m.rng.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(m.rng.IntN(100)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(m.rng.IntN(100)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(m.rng.Float64())
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", m.rng.IntN(1000)))
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
		v.Elem().Set(m.fresh(t.Elem()))
	case reflect.Slice:
		n := 1 + m.rng.IntN(3)
		v.Set(reflect.MakeSlice(t, n, n))
		for i := range n {
			v.Index(i).Set(m.fresh(t.Elem()))
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(t))
		for range 1 + m.rng.IntN(2) {
			v.SetMapIndex(m.fresh(t.Key()), m.fresh(t.Elem()))
		}
	case reflect.Struct:
		for i := range t.NumField() {
			settable(v.Field(i)).Set(m.fresh(t.Field(i).Type))
		}
	default:
		panic(fmt.Sprintf("no random value of %s: teach the test", t))
	}
	return v
}

// assign sets v to a fresh value that differs from it.
func (m *mutator) assign(v reflect.Value) {
	old := testutil.Describe(v)
	for range 100 {
		nv := m.fresh(v.Type())
		if testutil.Describe(nv) != old {
			v.Set(nv)
			return
		}
	}
	panic(fmt.Sprintf("no value of %s differs from %s", v.Type(), old))
}

// inPlace changes what v holds without assigning v: each element of a slice, each
// entry of a map (and one more), each field of a struct, what a pointer points to.
// Nodes, tasks, jobs and queues that v points to are left alone: they are objects of
// their own.
func (m *mutator) inPlace(v reflect.Value) {
	if _, ok := m.graph[v.Type()]; ok || v.Type() == timeType {
		return
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			e := settable(v.Index(i))
			m.inPlace(e)
			m.assign(e)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			v.SetMapIndex(k, m.fresh(v.Type().Elem()))
		}
		v.SetMapIndex(m.fresh(v.Type().Key()), m.fresh(v.Type().Elem()))
	case reflect.Struct:
		for i := range v.NumField() {
			f := settable(v.Field(i))
			m.inPlace(f)
			m.assign(f)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			m.inPlace(v.Elem())
			m.assign(v.Elem())
		}
	}
}

// settable returns v, addressable, as a value that may be set even when it was
// reached through an unexported field.
func settable(v reflect.Value) reflect.Value {
	if v.CanSet() {
		return v
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}
