package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one component the harness runs, with its log in <dir>/logs/<name>.log.
type Process struct {
	Name string
	bin  string
	args []string
	env  []string
	log  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startProcess starts bin with args (and env added to the harness's own), its output
// appended to the log file.
func startProcess(logDir, name, bin string, args []string, env ...string) (*Process, error) {
	p := &Process{Name: name, bin: bin, args: args, env: env, log: filepath.Join(logDir, name+".log")}
	return p, p.Start()
}

// Start starts the process again after Stop or Kill.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("%s is running already", p.Name)
		}
	}
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "=== %s start: %s %s\n", time.Now().Format(time.RFC3339), p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: a signal reaches the process and nothing it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	p.cmd, p.done, p.err = cmd, make(chan struct{}), nil
	done := p.done
	go func() {
		err := cmd.Wait()
		out.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// PID is the running process's id.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Exited says whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM and waits up to grace before SIGKILL.
func (p *Process) Stop(grace time.Duration) {
	p.signal(syscall.SIGTERM, grace)
}

// SetEnv sets the environment variable key to value for the next Start.
func (p *Process) SetEnv(key, value string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.env = slices.DeleteFunc(p.env, func(e string) bool { return strings.HasPrefix(e, key+"=") })
	p.env = append(p.env, key+"="+value)
}

// Kill ends the process at once, as a crash would.
func (p *Process) Kill() { p.signal(syscall.SIGKILL, 0) }

func (p *Process) signal(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-done:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
