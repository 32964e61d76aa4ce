package lint

import (
	"cmp"
	"fmt"
	"os"
	"regexp"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/tessera-gpu/tessera/internal/yamlerr"
)

// Build runs kustomize (the API behind kubectl kustomize) on the kustomization in dir
// and returns its objects as multi-document YAML. Kustomizations that include
// themselves or name remote locations (which kustomize would fetch), files outside their kustomization's directory and files over the YAML
// reader's limits (yamlerr.MaxFileBytes, yamlerr.MaxAliasNodes) are refused before
// kustomize expands them; errors.Is(err, yamlerr.ErrLimit) tells the last apart.
func Build(dir string) ([]byte, error) {
	r := newReader(dir)
	if err := r.checkGraph([]string{dir}); err != nil {
		return nil, err
	}
	for _, k := range r.kusts { // what kustomize would fetch is not read
		for _, res := range k.resources {
			if remote(res) {
				return nil, fmt.Errorf("%s:%d: resource %s is remote; only the repository's files are read: vendor it into the repository", k.file, k.line(res), res)
			}
		}
		if len(k.remote) > 0 {
			r := k.remote[0]
			return nil, fmt.Errorf("%s:%d: %s names %s, a remote location; only the repository's files are read: vendor it into the repository", k.file, r.line, r.field, r.value)
		}
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	fs := &boundedFS{FileSystem: filesys.MakeFsOnDisk()}
	m, err := k.Run(fs, dir)
	if err != nil {
		if fs.limit != nil { // kustomize flattens the errors of the files it reads
			return nil, fs.limit
		}
		return nil, err
	}
	return m.AsYaml()
}

// boundedFS is the disk, each file checked against the YAML reader's limits as
// kustomize reads it: kustomize decodes every file it reads (resources, patches,
// generators' sources) and expands its aliases.
type boundedFS struct {
	filesys.FileSystem
	limit error // the first limit a file exceeded
}

func (fs *boundedFS) ReadFile(path string) ([]byte, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() { // a pipe would block
		return nil, fmt.Errorf("%s: not a regular file", path)
	} else if err == nil && st.Size() > yamlerr.MaxFileBytes {
		fs.limit = cmp.Or(fs.limit, yamlerr.TooLarge(path))
		return nil, fs.limit
	}
	b, err := fs.FileSystem.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := yamlerr.Check(path, b); err != nil {
		fs.limit = cmp.Or(fs.limit, err)
		return nil, err
	}
	return b, nil
}

// Go values kustomize prints in its errors: a resource id, and a generator's pointer.
var (
	resID     = regexp.MustCompile(`resid\.ResId\{Gvk:resid\.Gvk\{Group:"[^"]*", Version:"[^"]*", Kind:"([^"]*)"[^}]*\}, Name:"([^"]*)", Namespace:"([^"]*)"\}`)
	goPointer = regexp.MustCompile(` ?&\{0x[0-9a-f]+[^}]*\}`)
)

// kustomizeMessage is a kustomize error with the Go values it prints spelled as
// people name objects: "ConfigMap argocd-cm" instead of a resid.ResId struct.
func kustomizeMessage(err error) string {
	msg := resID.ReplaceAllStringFunc(err.Error(), func(m string) string {
		p := resID.FindStringSubmatch(m)
		if p[3] != "" {
			return p[1] + " " + p[3] + "/" + p[2]
		}
		return p[1] + " " + p[2]
	})
	return goPointer.ReplaceAllString(msg, "")
}
