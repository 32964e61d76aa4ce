package chart

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"sigs.k8s.io/yaml"
)

// ReleaseName is the release name every rendering uses (object names do not depend on it).
const ReleaseName = "tessera"

// Manifest is the output of one template, or one CRD file of the chart's crds/.
type Manifest struct {
	// Path is relative to the chart's templates/ (scheduler/deployment.yaml), or
	// crds/<file> for a CRD.
	Path string
	// Docs are the YAML documents, without empty ones.
	Docs []string
	// Hook is set when the template's documents are Helm hooks (helm.sh/hook, such as the
	// `helm test` Pod): not part of an installed release, and left out of the kustomize
	// base. A template holds hooks only or none.
	Hook bool
}

// Options tune a rendering.
type Options struct {
	// Namespace is the release namespace.
	Namespace string
	// Values override the chart's values.yaml.
	Values map[string]any
	// Service is .Release.Service (app.kubernetes.io/managed-by); empty: Helm.
	Service string
	// APIVersions are served by the cluster besides Helm's defaults, as
	// `helm template --api-versions` gives them ("resource.k8s.io/v1/DeviceClass").
	APIVersions []string
}

// Load loads the chart in dir.
func Load(dir string) (*chartv2.Chart, error) { return loader.Load(dir) }

// Render renders the chart in dir with opts, validating the values against the chart's
// values.schema.json. CRDs come first, then the templates in path order.
func Render(dir string, opts Options) ([]Manifest, error) {
	ch, out, err := renderChart(dir, opts)
	if err != nil {
		return nil, err
	}
	var ms []Manifest
	for _, crd := range ch.CRDObjects() {
		ms = append(ms, Manifest{Path: crd.Name, Docs: splitDocs(string(crd.File.Data))})
	}
	prefix := ch.Name() + "/templates/"
	var names []string
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rel, ok := strings.CutPrefix(name, prefix)
		if !ok {
			return nil, fmt.Errorf("template %s outside %s", name, prefix)
		}
		if path.Ext(rel) != ".yaml" {
			continue // NOTES.txt, helpers
		}
		if docs := splitDocs(out[name]); len(docs) > 0 {
			hook, err := hooks(docs)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", rel, err)
			}
			ms = append(ms, Manifest{Path: rel, Docs: docs, Hook: hook})
		}
	}
	return ms, nil
}

// RenderNotes renders the chart's templates/NOTES.txt, what `helm install` prints.
func RenderNotes(dir string, opts Options) (string, error) {
	ch, out, err := renderChart(dir, opts)
	if err != nil {
		return "", err
	}
	notes, ok := out[ch.Name()+"/templates/NOTES.txt"]
	if !ok {
		return "", fmt.Errorf("%s has no templates/NOTES.txt", dir)
	}
	return notes, nil
}

func renderChart(dir string, opts Options) (*chartv2.Chart, map[string]string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, nil, err
	}
	caps := *common.DefaultCapabilities
	caps.APIVersions = append(slices.Clone(caps.APIVersions), opts.APIVersions...)
	vals, err := chartutil.ToRenderValues(ch, opts.Values, common.ReleaseOptions{
		Name: ReleaseName, Namespace: opts.Namespace, Revision: 1, IsInstall: true,
	}, &caps)
	if err != nil {
		return nil, nil, err
	}
	if opts.Service != "" {
		vals["Release"].(map[string]any)["Service"] = opts.Service
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		return nil, nil, err
	}
	return ch, out, nil
}

// hooks reports whether the documents are Helm hooks; a mix is an error.
func hooks(docs []string) (bool, error) {
	n := 0
	for _, d := range docs {
		var o struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(d), &o); err != nil {
			return false, err
		}
		if o.Metadata.Annotations["helm.sh/hook"] != "" {
			n++
		}
	}
	if n > 0 && n < len(docs) {
		return false, fmt.Errorf("%d of %d documents are Helm hooks: keep hooks in templates of their own", n, len(docs))
	}
	return n > 0, nil
}

// splitDocs splits a YAML stream into its documents, dropping those that hold only
// comments and blank lines (a template whose condition is off).
func splitDocs(s string) []string {
	var docs []string
	for _, d := range strings.Split("\n"+s, "\n---") {
		d = strings.TrimLeft(d, "\n")
		if d = strings.TrimRight(d, " \n") + "\n"; hasContent(d) {
			docs = append(docs, d)
		}
	}
	return docs
}

func hasContent(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}
