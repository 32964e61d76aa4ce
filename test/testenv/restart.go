package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Kill ends the control plane's component ("kube-apiserver" or "etcd") at once, with
// SIGKILL, as a crash would; Revive starts it again with the same command line (its
// data, certificates and ports), and Restart does both, down for the time given.
func (e *Env) Kill(component string) error {
	pid, args, err := e.controlPlaneProcess(component)
	if err != nil {
		return err
	}
	if e.stopped == nil {
		e.stopped = map[string][]string{}
	}
	e.stopped[component] = args
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s: %w", component, err)
	}
	// envtest or Revive waits for the process; it is gone once /proc says so.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if !processAlive(pid) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s (pid %d) still runs 10s after SIGKILL", component, pid)
}

// Revive starts a component Kill ended and waits until the API server answers again.
func (e *Env) Revive(ctx context.Context, component string) error {
	args := e.stopped[component]
	if args == nil {
		return fmt.Errorf("%s was not killed", component)
	}
	log, err := os.OpenFile(filepath.Join(os.TempDir(), "tessera-testenv-"+component+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s again: %w", component, err)
	}
	delete(e.stopped, component)
	e.revived = append(e.revived, cmd)
	go func() { _ = cmd.Wait(); log.Close() }()
	return e.WaitServing(ctx, 2*time.Minute)
}

// Restart kills component and starts it again after down.
func (e *Env) Restart(ctx context.Context, component string, down time.Duration) error {
	if err := e.Kill(component); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	return e.Revive(ctx, component)
}

// WaitServing waits until the API server reads from etcd again (a list of namespaces).
func (e *Env) WaitServing(ctx context.Context, timeout time.Duration) error {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := cs.CoreV1().Namespaces().List(rctx, metav1.ListOptions{Limit: 1})
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the API server does not serve %s after a restart: %w", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stopRevived ends the components Revive started (Stop calls it before envtest's stop).
func (e *Env) stopRevived() {
	for _, cmd := range e.revived {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, cmd := range e.revived {
		done := make(chan struct{})
		go func() {
			for processAlive(cmd.Process.Pid) {
				time.Sleep(50 * time.Millisecond)
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	}
	e.revived = nil
}

// controlPlaneProcess finds this process's child named component and its command line.
func (e *Env) controlPlaneProcess(component string) (int, []string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		open, closing := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || closing < open {
			continue
		}
		fields := strings.Fields(string(stat[closing+1:]))
		if len(fields) < 2 || string(stat[open+1:closing]) != component {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid != os.Getpid() || fields[0] == "Z" {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		return pid, strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00"), nil
	}
	return 0, nil, fmt.Errorf("no running %s started by this process", component)
}

// processAlive reports whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	closing := bytes.LastIndexByte(stat, ')')
	return closing < 0 || !strings.HasPrefix(strings.TrimSpace(string(stat[closing+1:])), "Z")
}
