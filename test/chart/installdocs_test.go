package chart

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"
)

// installPages are the pages whose `helm install` commands a user copies.
var installPages = []string{"README.md", "docs/install.md", "deploy/helm/tessera/README.md", "docs/migrating-from-volcano.md", "docs/migrating-from-kueue.md"}

// installCommand is a `helm install` of the chart with its continuation lines.
var installCommand = regexp.MustCompile(`(?m)^[ \t]*helm install tessera deploy/helm/tessera(?:[^\n]*\\\n)*[^\n]*`)

// Each `helm install` command of installPages, with REG and TAG as `make images` sets
// them, renders: it sets the images (the chart refuses to render without them), every
// value it sets is one the chart's schema knows, and the workloads run the images built.
// A commit's abbreviated hash of digits only, which `git describe --always` may print,
// is a tag too: --set would make it a number.
func TestInstallCommandsRender(t *testing.T) {
	const reg = "registry.example.com/tessera"
	for _, page := range installPages {
		b, err := os.ReadFile(filepath.Join("..", "..", page))
		if err != nil {
			t.Fatal(err)
		}
		found := installCommand.FindAllStringIndex(string(b), -1)
		if len(found) == 0 {
			t.Errorf("%s: no `helm install tessera deploy/helm/tessera` command", page)
		}
		for _, at := range found {
			cmd := string(b[at[0]:at[1]])
			line := strings.Count(string(b[:at[0]]), "\n") + 1
			for _, tag := range []string{"v0.2.0-3-g424e14c", "4240140"} {
				t.Run(fmt.Sprintf("%s:%d/%s", page, line, tag), func(t *testing.T) {
					v := setValues(t, cmd, reg, tag)
					values, err := yaml.Marshal(v)
					if err != nil {
						t.Fatal(err)
					}
					ws := workloads(t, string(values))
					for id, o := range ws {
						for _, c := range containers(o) {
							if img := str(c, "image"); !strings.HasPrefix(img, reg+"/tessera") || !strings.HasSuffix(img, ":"+tag) {
								t.Errorf("%s container %s runs %s, not an image of %s tagged %s", id, str(c, "name"), img, reg, tag)
							}
						}
					}
					if path := str(v, "nodeAgent", "toolkitConfig"); path != "" {
						args := fmt.Sprint(get(containers(ws["DaemonSet/tessera-node-agent"])[0], "args"))
						if !strings.Contains(args, "--toolkit-config=/host"+path) {
							t.Errorf("nodeAgent.toolkitConfig=%s: the node agent's args are %s", path, args)
						}
					}
				})
			}
		}
	}
}

// setValues are the values that cmd's --set and --set-string flags give, with $REG
// and $TAG replaced as a shell would.
func setValues(t *testing.T, cmd, reg, tag string) map[string]any {
	t.Helper()
	words := strings.Fields(strings.NewReplacer("\\\n", " ", "$REG", reg, "$TAG", tag, "'", "", `"`, "").Replace(cmd))
	v := map[string]any{}
	for i := 0; i < len(words)-1; i++ {
		var err error
		switch set := words[i+1]; words[i] {
		case "--set":
			err = strvals.ParseInto(set, v)
		case "--set-string":
			err = strvals.ParseIntoString(set, v)
		case "-f", "--values":
			t.Fatalf("%s: values files are not checked here", cmd)
		default:
			continue
		}
		if err != nil || strings.Contains(words[i+1], "$") {
			t.Fatalf("%s %s: %v (unknown shell variables?)", words[i], words[i+1], err)
		}
		i++
	}
	return v
}

// `make images` (hack/images.sh) says what it needs before it builds anything: the
// registry to push to, and a builder that works here.
func TestMakeImagesSaysWhatItNeeds(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want []string
	}{
		{nil, []string{"REGISTRY is not set", "make images REGISTRY="}},
		{[]string{"REGISTRY=registry.example.com/tessera", "BUILDER=tessera-no-such-builder"},
			[]string{"no container builder works here", "Docker, with its daemon running", "Podman or Buildah", "tessera-no-such-builder: not installed"}},
	} {
		cmd := exec.Command("bash", filepath.Join("..", "..", "hack", "images.sh"))
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool {
			return strings.HasPrefix(e, "REGISTRY=") || strings.HasPrefix(e, "BUILDER=")
		}), c.env...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%v: hack/images.sh succeeded, want it to stop and say what it needs", c.env)
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%v: hack/images.sh does not say %q:\n%s", c.env, w, out)
			}
		}
	}
}
