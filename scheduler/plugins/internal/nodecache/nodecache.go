package nodecache

import (
	"fmt"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Verdict is what a placer computed for a task shape on a node.
type Verdict struct {
	GPUs  framework.GPUSet
	Score float64
	OK    bool
}

type entry struct {
	node    *framework.Node
	version uint64
	valid   bool
	Verdict
}

type shape struct {
	cpu, memory, milli, mem int64
	count                   int
	models                  string
}

// Cache holds verdicts per node index and shape.
type Cache struct {
	shapes  map[shape]int
	entries [][]entry // [shape id][node index]: one task is scored on many nodes in a row
	// lastTask and lastID skip the shape lookup while one task is scored on many nodes.
	lastTask *framework.Task
	lastID   int
}

// Reset drops every verdict (call when the scoring inputs, such as the workload, change).
func (c *Cache) Reset() {
	c.shapes = nil
	c.entries = nil
	c.lastTask = nil
}

func shapeOf(t *framework.Task) shape {
	s := shape{cpu: t.Request.MilliCPU, memory: t.Request.Memory, milli: t.GPU.Milli, mem: t.GPU.MemoryMiB, count: t.GPU.Count}
	if len(t.GPU.Models) > 0 {
		s.models = fmt.Sprint(t.GPU.Models)
	}
	return s
}

// NewSession forgets the last task: tasks of an earlier session may be freed and their
// addresses reused. Call it from OnSessionOpen.
func (c *Cache) NewSession() { c.lastTask = nil }

// Get returns the cached verdict for t on n, computing it when n changed since.
// compute must depend only on the node's allocation and the task's CPU, memory and GPU
// request.
func (c *Cache) Get(t *framework.Task, n *framework.Node, compute func() Verdict) Verdict {
	if c.shapes == nil {
		c.shapes = map[shape]int{}
	}
	id := c.lastID
	if t != c.lastTask {
		key := shapeOf(t)
		var ok bool
		if id, ok = c.shapes[key]; !ok {
			id = len(c.shapes)
			c.shapes[key] = id
		}
		c.lastTask, c.lastID = t, id
	}
	for len(c.entries) <= id {
		c.entries = append(c.entries, nil)
	}
	row := c.entries[id]
	if len(row) <= n.Index {
		row = append(row, make([]entry, n.Index+1-len(row))...)
		c.entries[id] = row
	}
	e := &row[n.Index]
	if e.valid && e.node == n && e.version == n.Version {
		return e.Verdict
	}
	v := compute()
	*e = entry{node: n, version: n.Version, valid: true, Verdict: v}
	return v
}
