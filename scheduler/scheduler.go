package scheduler

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Action is one step of a session (enqueue, allocate, preempt, reclaim, backfill).
type Action interface {
	Name() string
	Execute(s *Session)
}

type weightedScorer struct {
	framework.NodeScorer
	weight float64
}

// Scheduler runs sessions with one configuration. It keeps reservations for starving
// gangs, recent preemptions (so that a victim never evicts its preemptor) and the
// tie-breaking random source between sessions; otherwise every session starts from the
// snapshot alone. It runs one session at a time: RunSession is not safe for concurrent
// use (the simulator builds one Scheduler per run).
type Scheduler struct {
	cfg          Config
	actions      []Action
	filters      []framework.Filter
	scorers      []weightedScorer
	placer       framework.GPUPlacer
	placerWeight float64
	jobOrder     []framework.JobOrder
	victimOrder  []framework.VictimOrder
	victimFilter []framework.VictimFilter
	gang         framework.Gang
	queueOrder   framework.QueueOrder
	admission    framework.QueueAdmission
	enqueueGates []framework.EnqueueGate
	overused     framework.QueueOverused
	reclaim      framework.ReclaimPolicy
	observers    []framework.SnapshotObserver
	shares       framework.QueueShares
	rng          *rand.Rand
	pcg          *rand.PCG // rng's source, copied by WhatIf
	firstTie     bool
	// reservations maps node name to the key of the job it is held for.
	reservations map[string]string
	// gated is set when an enqueue action admits jobs; without one every job is admitted.
	gated bool
	// evictedBy maps a victim job's key to the keys of the jobs it was evicted for; a
	// victim never evicts those in turn, so preemption cannot loop.
	evictedBy map[string]map[string]bool
	// jobs is what the scheduler remembers of each job between sessions, keyed by job
	// UID, so that a snapshot rebuilt from API objects every session loses nothing.
	jobs map[string]jobMemory
	// runs are the jobs making progress, by UID, and history the recent runtimes of
	// each class, for runtime estimates (estimate.go); gen counts the sessions.
	runs    map[string]run
	history map[string]*history
	gen     uint64
}

// jobMemory is the state of a job that outlives one session.
type jobMemory struct {
	// waitingSince is when the job started waiting for placement (zero: not waiting).
	waitingSince time.Time
	// inqueue is set once the enqueue action admitted the job.
	inqueue bool
}

// New builds a scheduler from a configuration.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pcg := rand.NewPCG(uint64(cfg.Seed), 0x7e55e7a)
	s := &Scheduler{cfg: cfg, rng: rand.New(pcg), pcg: pcg, reservations: map[string]string{},
		jobs: map[string]jobMemory{}, firstTie: cfg.TieBreak == TieBreakFirst, runs: map[string]run{}, history: map[string]*history{}}
	for _, name := range cfg.actionNames() {
		a, ok := actionRegistry[name]
		if !ok {
			return nil, fmt.Errorf("actions: unknown action %q; known: %s", name, knownActions())
		}
		s.actions = append(s.actions, a)
		s.gated = s.gated || name == "enqueue"
	}
	for ti, tier := range cfg.Tiers {
		for pi, po := range tier.Plugins {
			p, err := newPlugin(po)
			if err != nil {
				return nil, fmt.Errorf("tiers[%d].plugins[%d] (%s): %w", ti, pi, po.Name, err)
			}
			if err := s.add(p, po); err != nil {
				return nil, fmt.Errorf("tiers[%d].plugins[%d] (%s): %w", ti, pi, po.Name, err)
			}
		}
	}
	return s, nil
}

func (s *Scheduler) add(p framework.Plugin, po PluginOption) error {
	weight := po.weight()
	if f, ok := p.(framework.Filter); ok {
		s.filters = append(s.filters, f)
	}
	if sc, ok := p.(framework.NodeScorer); ok {
		if w, ok := p.(interface{ PluginWeight() float64 }); ok && po.Weight == 0 {
			weight = w.PluginWeight()
		}
		s.scorers = append(s.scorers, weightedScorer{sc, weight})
	}
	if gp, ok := p.(framework.GPUPlacer); ok {
		if s.placer != nil {
			return fmt.Errorf("a second GPU placer; %s is already configured, enable only one", s.placer.Name())
		}
		s.placer, s.placerWeight = gp, weight
	}
	if o, ok := p.(framework.JobOrder); ok {
		s.jobOrder = append(s.jobOrder, o)
	}
	if o, ok := p.(framework.VictimOrder); ok {
		s.victimOrder = append(s.victimOrder, o)
	}
	if f, ok := p.(framework.VictimFilter); ok {
		s.victimFilter = append(s.victimFilter, f)
	}
	if g, ok := p.(framework.Gang); ok {
		s.gang = g
	}
	if q, ok := p.(framework.QueueOrder); ok {
		s.queueOrder = q
	}
	if o, ok := p.(framework.QueueOverused); ok {
		s.overused = o
	}
	if g, ok := p.(framework.EnqueueGate); ok {
		s.enqueueGates = append(s.enqueueGates, g)
	}
	if a, ok := p.(framework.QueueAdmission); ok {
		s.admission = a
	}
	if r, ok := p.(framework.ReclaimPolicy); ok {
		s.reclaim = r
	}
	if q, ok := p.(framework.QueueShares); ok {
		if s.shares != nil {
			return fmt.Errorf("a second queue-share plugin; %s is already configured, enable only one", s.shares.Name())
		}
		s.shares = q
	}
	if o, ok := p.(framework.SnapshotObserver); ok {
		s.observers = append(s.observers, o)
	}
	return nil
}

// RunSession runs the configured actions over snap, mutating it to reflect the
// decisions, and returns them. Jobs left pending carry a Reason.
func (s *Scheduler) RunSession(snap *framework.Snapshot) *Result {
	ssn := &Session{
		Scheduler:  s,
		Snap:       snap,
		rng:        s.rng,
		blocked:    map[*framework.Queue]bool{},
		evicted:    map[*framework.Task]bool{},
		unfit:      map[shapeKey]bool{},
		unfitStats: map[shapeKey]*framework.FitStats{},
	}
	ssn.open()
	for _, a := range s.actions {
		a.Execute(ssn)
	}
	ssn.noteReclaimWait()
	ssn.close()
	return &ssn.Result
}

// open derives totals, queue usage and reservations from the snapshot.
func (s *Session) open() {
	snap := s.Snap
	snap.Total = framework.Resources{}
	snap.MaxGPUMemoryMiB = 0
	byName := make(map[string]*framework.Node, len(s.reservations))
	for i, n := range snap.Nodes {
		n.Index = i
		n.Reserved = nil
		if len(s.reservations) > 0 {
			byName[n.Name] = n
		}
		if !n.Unschedulable {
			snap.Total.Add(&n.Allocatable)
		}
		for g := range n.GPUs {
			snap.MaxGPUMemoryMiB = max(snap.MaxGPUMemoryMiB, n.GPUs[g].MemoryMiB)
		}
	}
	for _, q := range snap.Queues {
		q.Allocated, q.Request = framework.Resources{}, framework.Resources{}
	}
	jobs := make(map[string]*framework.Job, len(s.reservations))
	for _, j := range snap.Jobs {
		j.Pending = nil
		if r := cmp.Or(j.Refused, j.Held); r != nil {
			r := *r
			j.Pending = &r
		}
		if m, ok := s.Scheduler.jobs[j.UID]; ok {
			j.Inqueue = j.Inqueue || m.inqueue
			if j.WaitingSince.IsZero() {
				j.WaitingSince = m.waitingSince
			}
		}
		if len(s.reservations) > 0 {
			jobs[j.Key()] = j
		}
		for _, t := range j.Tasks {
			if t.Status.Holds() {
				s.charge(t, &t.Placed, +1)
			}
			if j.Queue == nil || t.Status == framework.TaskSucceeded || ((j.Refused != nil || j.Held != nil) && !t.Status.Holds()) {
				continue
			}
			r := t.Placed
			if t.Status == framework.TaskPending {
				r = t.Request
				r.GPU = t.GPU.NominalMilli(snap.MaxGPUMemoryMiB)
			}
			for q := j.Queue; q != nil; q = q.Parent {
				q.Request.Add(&r)
			}
		}
	}
	for node, key := range s.reservations {
		n, j := byName[node], jobs[key]
		if n == nil || j == nil || j.Count(framework.TaskPending) == 0 {
			delete(s.reservations, node)
			continue
		}
		n.Reserved, s.reservedFor = j, j
	}
	if s.runs != nil {
		s.learnRuns()
	}
	for _, o := range s.observers {
		o.OnSessionOpen(snap)
	}
}

// close stamps waiting times and remembers, per job UID, what the next session needs;
// jobs gone from the snapshot are forgotten.
func (s *Session) close() {
	mem := s.Scheduler.jobs
	if mem == nil {
		mem = make(map[string]jobMemory, len(s.Snap.Jobs))
	}
	clear(mem) // keeps its room for the next session
	for _, j := range s.Snap.Jobs {
		if j.Count(framework.TaskPending) > 0 && j.Pending != nil {
			if j.WaitingSince.IsZero() {
				j.WaitingSince = s.Snap.Now
			}
		} else {
			j.WaitingSince = time.Time{}
			j.Pending = nil
		}
		if j.Inqueue || !j.WaitingSince.IsZero() {
			mem[j.UID] = jobMemory{waitingSince: j.WaitingSince, inqueue: j.Inqueue}
		}
	}
	s.Scheduler.jobs = mem
}
