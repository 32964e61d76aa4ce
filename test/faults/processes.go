package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/tessera-gpu/tessera/internal/failpoint"
	"github.com/tessera-gpu/tessera/test/e2e"
)

// supervisor restarts Tessera's processes as a Deployment or DaemonSet would: the
// control-plane components after any exit, a node agent after a crash; except those
// the driver holds down. It counts the crashes fault points caused.
type supervisor struct {
	c       *e2e.Cluster
	logf    func(string, ...any)
	mu      sync.Mutex
	held    map[string]bool
	crashes map[string]int
}

func newSupervisor(c *e2e.Cluster, logf func(string, ...any)) *supervisor {
	return &supervisor{c: c, logf: logf, held: map[string]bool{}, crashes: map[string]int{}}
}

// run restarts exited processes every 200ms until ctx ends.
func (s *supervisor) run(ctx context.Context) {
	for ctx.Err() == nil {
		for _, name := range s.c.ProcessNames() {
			p := s.c.Process(name)
			exited, err := p.Exited()
			if !exited {
				continue
			}
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			s.mu.Lock()
			held := s.held[name]
			if code == failpoint.CrashStatus && !held {
				s.crashes[name]++
			}
			s.mu.Unlock()
			restart := code == failpoint.CrashStatus || strings.HasPrefix(name, "tessera-")
			if held || !restart {
				continue
			}
			if err := p.Start(); err == nil {
				s.logf("restarted %s (exit status %d)", name, code)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// crashed is how many crashes the supervisor saw, in all.
func (s *supervisor) crashed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.crashes {
		n += c
	}
	return n
}

// kill ends name at once and keeps it down for down, then starts it again.
func (s *supervisor) kill(ctx context.Context, name string, down time.Duration) error {
	p := s.c.Process(name)
	if p == nil {
		return fmt.Errorf("no process %s", name)
	}
	s.mu.Lock()
	s.held[name] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.held, name)
		s.mu.Unlock()
	}()
	p.Kill()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	if exited, _ := p.Exited(); exited {
		return p.Start()
	}
	return nil
}

// arm arms point with action in the process name.
func arm(c *e2e.Cluster, name string, point string, action string) error {
	return failpointRequest(c, name, http.MethodPut, point, action)
}

// disarm disarms point in the process name, if it runs.
func disarm(c *e2e.Cluster, name string, point string) {
	_ = failpointRequest(c, name, http.MethodDelete, point, "")
}

func failpointRequest(c *e2e.Cluster, name, method, point, body string) error {
	addr := c.FailpointAddr(name)
	if addr == "" {
		return fmt.Errorf("%s serves no fault points", name)
	}
	req, err := http.NewRequest(method, "http://"+addr+"/"+point, strings.NewReader(body))
	if err != nil {
		return err
	}
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("%s %s on %s: %s", method, point, name, resp.Status)
	}
	return nil
}

// stats reads the fault points' statistics of the process name.
func stats(c *e2e.Cluster, name string) (map[failpoint.Point]failpoint.Stats, error) {
	addr := c.FailpointAddr(name)
	if addr == "" {
		return nil, fmt.Errorf("%s serves no fault points", name)
	}
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get("http://" + addr + "/")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[failpoint.Point]failpoint.Stats{}
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// leader is the replica of component (tessera-scheduler, tessera-autoscaler) that holds
// its Lease, as its leader_election_master_status metric says; "" when none does.
func leader(c *e2e.Cluster, component string) string {
	for _, name := range []string{component, component + "-2"} {
		addr := c.MetricsAddr(name)
		if addr == "" {
			continue
		}
		if exited, _ := c.Process(name).Exited(); exited {
			continue
		}
		client := http.Client{Timeout: 2 * time.Second}
		resp, err := client.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		isLeader := false
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "leader_election_master_status{") && strings.HasSuffix(line, " 1") {
				isLeader = true
			}
		}
		resp.Body.Close()
		if isLeader {
			return name
		}
	}
	return ""
}
