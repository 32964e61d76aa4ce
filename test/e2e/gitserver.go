package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GitServer serves one repository over http on 127.0.0.1 through Debian git's
// git-http-backend, as a Git host does for Flux; commits are made in a working copy and
// pushed to it.
type GitServer struct {
	// URL is the repository's clone URL.
	URL  string
	work string
	bare string
	srv  *http.Server
}

// startGitServer creates an empty repository under dir and serves it.
func startGitServer(dir string) (*GitServer, error) {
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("git is not installed: %w", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend")
	repos := filepath.Join(dir, "repos")
	g := &GitServer{work: filepath.Join(dir, "work"), bare: filepath.Join(repos, "config.git")}
	for _, args := range [][]string{
		{"init", "-q", "--bare", "-b", "main", g.bare},
		{"init", "-q", "-b", "main", g.work},
		{"-C", g.work, "config", "user.email", "platform@example.com"},
		{"-C", g.work, "config", "user.name", "Platform team"},
	} {
		if err := runGit(args...); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g.URL = fmt.Sprintf("http://%s/config.git", l.Addr())
	g.srv = &http.Server{Handler: &cgi.Handler{
		Path: backend,
		Env:  []string{"GIT_PROJECT_ROOT=" + repos, "GIT_HTTP_EXPORT_ALL=1"},
	}}
	go func() { _ = g.srv.Serve(l) }()
	return g, nil
}

// Stop stops serving.
func (g *GitServer) Stop() { _ = g.srv.Shutdown(context.Background()) }

// Commit writes files (path in the repository -> content; an empty content removes the
// file), commits them with message and pushes; it returns the commit's id.
func (g *GitServer) Commit(message string, files map[string]string) (string, error) {
	for path, content := range files {
		full := filepath.Join(g.work, path)
		if content == "" {
			if err := os.Remove(full); err != nil && !errors.Is(err, os.ErrNotExist) {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{
		{"-C", g.work, "add", "-A"},
		{"-C", g.work, "commit", "-q", "-m", message},
		{"-C", g.work, "push", "-q", g.bare, "main"},
	} {
		if err := runGit(args...); err != nil {
			return "", err
		}
	}
	out, err := exec.Command("git", "-C", g.work, "rev-parse", "HEAD").Output()
	return strings.TrimSpace(string(out)), err
}

// CopyTree returns the files under dir (relative to it) prefixed with prefix, for Commit.
func CopyTree(dir, prefix string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[filepath.Join(prefix, rel)] = string(b)
		return nil
	})
	return files, err
}

func runGit(args ...string) error {
	out, err := exec.Command("git", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}
