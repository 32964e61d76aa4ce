package lint

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tessera-gpu/tessera/internal/yamlerr"
)

// Limits on a repository, each named in the error that enforces it. A YAML file is
// also bounded by yamlerr.MaxFileBytes and yamlerr.MaxAliasNodes.
const (
	// MaxDepth is how deep kustomizations may include each other (a lists b, b lists
	// c, ...).
	MaxDepth = 32
	// MaxObjects is how many objects one top-level kustomization may hold.
	MaxObjects = 100_000
	// MaxBytes is how large the files of one top-level kustomization may be together.
	MaxBytes = 256 << 20
)

// kustomizationNames are the file names kustomize reads a kustomization from.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// kustomizationFile is the kustomization file of dir, "" when it has none.
func kustomizationFile(dir string) string {
	for _, n := range kustomizationNames {
		if st, err := os.Stat(filepath.Join(dir, n)); err == nil && st.Mode().IsRegular() {
			return filepath.Join(dir, n)
		}
	}
	return ""
}

// idPreserving are the kustomization fields whose build keeps every object's kind,
// namespace and name: a kustomization with only these builds to its resources with
// labels or annotations added, and fails only on two objects with the same identity.
var idPreserving = []string{"apiVersion", "kind", "resources", "commonAnnotations", "commonLabels", "labels"}

// kustomization is the part of a kustomization file the linter follows.
type kustomization struct {
	file string // as named to the user: the linted directory joined with the entries
	dir  string
	key  string // dir resolved
	// resources are its resources, bases and components, in order, with the line each
	// is listed on.
	resources []string
	lines     map[string]int
	// plain: only idPreserving fields.
	plain bool
	// remote are the URLs and remote repositories its other fields name (a patch's
	// path, a generator's files), which kustomize would fetch.
	remote []remoteRef
}

// remoteRef is a remote location a kustomization names, with its line.
type remoteRef struct {
	field, value string
	line         int
}

// remoteFree are the kustomization fields whose values are never locations: labels,
// annotations and names.
var remoteFree = []string{"apiVersion", "kind", "metadata", "commonAnnotations", "commonLabels", "labels", "buildMetadata", "namespace", "namePrefix", "nameSuffix", "resources", "bases", "components"}

// remotes collects the scalars under n that name remote locations.
func remotes(field string, n *yaml.Node, out *[]remoteRef) {
	if n.Kind == yaml.ScalarNode && remote(n.Value) {
		*out = append(*out, remoteRef{field, n.Value, n.Line})
	}
	for _, c := range n.Content {
		remotes(field, c, out)
	}
}

func (k *kustomization) line(resource string) int { return max(k.lines[resource], 1) }

// reader reads the kustomizations of one lint run, each once.
type reader struct {
	kusts map[string]*kustomization // by resolved directory
	// repo is the repository holding the linted directory (the nearest directory
	// above it with .git), "" when there is none; kustomizations outside it are
	// findings.
	repo string
}

func newReader(dir string) *reader {
	r := &reader{kusts: map[string]*kustomization{}}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return r
	}
	abs = resolve(abs)
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			r.repo = d
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return r
}

// resolve is path, absolute and with symbolic links evaluated when they can be.
func resolve(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// read reads the kustomization of dir, once.
func (r *reader) read(dir string) (*kustomization, error) {
	key := resolve(dir)
	if k, ok := r.kusts[key]; ok {
		return k, nil
	}
	file := kustomizationFile(dir)
	if file == "" {
		return nil, fmt.Errorf("%s: no kustomization file (%s)", dir, strings.Join(kustomizationNames, ", "))
	}
	b, err := yamlerr.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: not YAML: %v", file, err)
	}
	k := &kustomization{file: file, dir: dir, key: key, lines: map[string]int{}, plain: true}
	if len(doc.Content) > 0 && doc.Content[0].Kind == yaml.MappingNode {
		m := doc.Content[0]
		for i := 0; i+1 < len(m.Content); i += 2 {
			key, val := m.Content[i].Value, m.Content[i+1]
			if !slices.Contains(idPreserving, key) {
				k.plain = false
			}
			if !slices.Contains(remoteFree, key) {
				remotes(key, val, &k.remote)
			}
			if key != "resources" && key != "bases" && key != "components" {
				continue
			}
			if val.Kind != yaml.SequenceNode {
				return nil, fmt.Errorf("%s:%d: %s must be a list", file, val.Line, key)
			}
			for _, n := range val.Content {
				if n.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("%s:%d: %s: each entry is a path or URL", file, n.Line, key)
				}
				k.resources = append(k.resources, n.Value)
				k.lines[n.Value] = n.Line
			}
		}
	} else if len(doc.Content) > 0 && !(doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null") {
		return nil, fmt.Errorf("%s: a kustomization is a YAML object", file)
	}
	r.kusts[key] = k
	return k, nil
}

// remote reports whether a resource is fetched from elsewhere (a Git repository or a URL)
// rather than read from the repository.
func remote(resource string) bool {
	return strings.Contains(resource, "://") || strings.HasPrefix(resource, "git@") || strings.Contains(resource, "?ref=") ||
		strings.HasPrefix(resource, "github.com/") || strings.HasPrefix(resource, "gitlab.com/") || strings.HasPrefix(resource, "bitbucket.org/")
}

// subdirs are the kustomization directories k includes, with the entries that name
// them; missing, remote and outside ones are left to resourceFiles.
func (r *reader) subdirs(k *kustomization) (dirs, entries []string) {
	for _, res := range k.resources {
		if remote(res) {
			continue
		}
		p := filepath.Join(k.dir, res)
		if st, err := os.Stat(p); err != nil || !st.IsDir() || kustomizationFile(p) == "" {
			continue
		}
		if r.repo != "" && !within(resolve(p), r.repo) {
			continue
		}
		dirs, entries = append(dirs, p), append(entries, res)
	}
	return dirs, entries
}

// checkGraph reads the kustomizations reachable from dirs and refuses a cycle (a
// kustomization that includes itself, directly or not) and nesting deeper than
// MaxDepth, naming the files of the chain.
func (r *reader) checkGraph(dirs []string) error {
	const (
		onStack = 1
		done    = 2
	)
	state := map[string]int{} // by resolved directory
	type step struct {
		k     *kustomization
		entry string // how the previous kustomization names this one
	}
	var stack []step
	chain := func(from int) string { // the files of stack[from:], the middle left out of a long one
		var b strings.Builder
		steps := stack[from:]
		for i, s := range steps {
			switch {
			case len(steps) > 6 && i >= 2 && i < len(steps)-3:
				if i == 2 {
					b.WriteString(" → …")
				}
				continue
			case i > 0 && len(steps) > 6 && i == len(steps)-3:
				b.WriteString(" → ")
			case i > 0:
				fmt.Fprintf(&b, " lists %s → ", s.entry)
			}
			b.WriteString(s.k.file)
		}
		return b.String()
	}
	var visit func(dir, entry string) error
	visit = func(dir, entry string) error {
		k, err := r.read(dir)
		if err != nil {
			return err
		}
		stack = append(stack, step{k, entry})
		defer func() { stack = stack[:len(stack)-1] }()
		if len(stack) > MaxDepth {
			return fmt.Errorf("kustomizations nest more than %d deep, the most gitops lint follows: %s", MaxDepth, chain(len(stack)-MaxDepth-1))
		}
		state[k.key] = onStack
		subs, entries := r.subdirs(k)
		for i, sub := range subs {
			key := resolve(sub)
			switch state[key] {
			case done:
				continue
			case onStack:
				from := slices.IndexFunc(stack, func(s step) bool { return s.k.key == key })
				return fmt.Errorf("kustomization cycle: %s lists %s → %s; kustomize cannot build a kustomization that includes itself; remove one of these entries",
					chain(from), entries[i], stack[from].k.file)
			}
			if err := visit(sub, entries[i]); err != nil {
				return err
			}
		}
		state[k.key] = done
		return nil
	}
	for _, d := range dirs {
		if state[resolve(d)] == 0 {
			if err := visit(d, ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// roots are the kustomization directories under dir that no other one under dir
// includes, after checking the graph.
func (r *reader) roots(dir string) ([]string, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory; point gitops lint at a repository of kustomizations (for example gitops/clusters)", dir)
	}
	var all []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() && kustomizationFile(path) != "" {
			all = append(all, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		if k, err := r.generate(dir); err != nil || k != nil {
			return []string{dir}, err
		}
		return nil, fmt.Errorf("%s: no kustomization file (%s) and no manifests found; point gitops lint at a repository of kustomizations (for example gitops/clusters)", dir, strings.Join(kustomizationNames, ", "))
	}
	if err := r.checkGraph(all); err != nil {
		return nil, err
	}
	included := map[string]bool{}
	for _, d := range all {
		k, _ := r.read(d)
		subs, _ := r.subdirs(k)
		for _, s := range subs {
			included[resolve(s)] = true
		}
	}
	var out []string
	for _, d := range all {
		if !included[resolve(d)] {
			out = append(out, d)
		}
	}
	return out, nil
}

// manifestKind finds a top-level kind, which every Kubernetes manifest has.
var manifestKind = regexp.MustCompile(`(?m)^kind:`)

// generate makes the kustomization Flux makes of a directory without one: every
// manifest (a YAML file with a top-level kind) under dir, in path order. nil when
// there is none.
func (r *reader) generate(dir string) (*kustomization, error) {
	k := &kustomization{file: filepath.Join(dir, "kustomization.yaml (generated as Flux does)"), dir: dir, key: resolve(dir), lines: map[string]int{}, plain: true}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != dir && strings.HasPrefix(d.Name(), "."):
			return filepath.SkipDir
		case d.IsDir() || !d.Type().IsRegular():
			return nil
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		b, err := yamlerr.ReadFile(path)
		if err != nil {
			return err
		}
		if manifestKind.Match(b) {
			rel, _ := filepath.Rel(dir, path)
			k.resources = append(k.resources, rel)
		}
		return nil
	})
	if err != nil || len(k.resources) == 0 {
		return nil, err
	}
	r.kusts[k.key] = k
	return k, nil
}
