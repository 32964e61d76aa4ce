package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// peakRSSMiB reads the peak resident set size (VmHWM) of process pid, in MiB.
func peakRSSMiB(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0, fmt.Errorf("VmHWM %q: %w", v, err)
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
}

// startGrace is how long a process must run before it counts as started.
const startGrace = 2 * time.Second

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// process starts bin with args (a {kubeconfig} argument is replaced by the path of a
// kubeconfig for the API server) and returns a stop that records its peak RSS in
// b.rssMiB, kills it and keeps its log next to the report as <name>-<ns>.log.
func (b *bench) process(ctx context.Context, name, ns, bin string, args ...string) (func(), error) {
	dir, err := os.MkdirTemp("", name)
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := b.env.WriteKubeconfig(kubeconfig); err != nil {
		return nil, err
	}
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "{kubeconfig}", kubeconfig)
		args[i] = strings.ReplaceAll(args[i], "{dir}", dir)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	logFile, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	// A process that cannot start (a bad flag, say) exits at once: say why now, not
	// at the measurement's timeout.
	select {
	case <-exited:
		_ = logFile.Close()
		log, _ := os.ReadFile(logFile.Name())
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("%s exited at start: %s", name, lastLines(string(log), 5))
	case <-time.After(startGrace):
	}
	return func() {
		select {
		case <-exited:
			fmt.Fprintf(os.Stderr, "%s exited early; see its log\n", name)
		default:
			if mib, err := peakRSSMiB(cmd.Process.Pid); err == nil {
				b.rssMiB = mib
			}
			// SIGTERM first, so that the process stops as it does in a cluster and
			// flushes its log.
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		_ = logFile.Close()
		// Keep the log next to the report, for a run that looks wrong.
		_ = os.Rename(logFile.Name(), filepath.Join(filepath.Dir(b.out), name+"-"+ns+".log"))
		_ = os.RemoveAll(dir)
	}, nil
}
