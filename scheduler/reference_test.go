package scheduler_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/internal/golden"
	"github.com/tessera-gpu/tessera/scheduler"
)

// schedulerConfigReference is docs/reference/scheduler-config.md, generated from this
// package: the configuration types and their doc comments, the actions, the plugin
// registry and the profiles.
const schedulerConfigReference = "../docs/reference/scheduler-config.md"

// TestSchedulerConfigReference keeps docs/reference/scheduler-config.md equal to what
// the code declares. Regenerate it with `make generate` (TESSERA_UPDATE_REFERENCE=1).
func TestSchedulerConfigReference(t *testing.T) {
	docs := goDocs(t, ".")
	iface := goDocs(t, "framework")
	var b bytes.Buffer
	b.WriteString("# Scheduler configuration reference\n\n" +
		"<!-- Generated from package scheduler (its configuration types, actions, plugin registry and profiles) by `make generate`; do not edit. -->\n\n" +
		"The scheduler configuration is what `tessera scheduler --config` (the chart's `scheduler.config`) and " +
		"`tessera simulate --config` read, as YAML; without it, `--profile` picks one of the [built-in profiles](#profiles). " +
		"Every flag: [cli.md](cli.md).\n")

	b.WriteString("\n## File format\n\n")
	prose, example := splitExample(docs.types["Config"])
	fmt.Fprintf(&b, "%s\n\n```yaml\n%s```\n", backtickFirst(oneLine(prose), "Config"), example)
	if _, err := scheduler.ParseConfig([]byte(example)); err != nil {
		t.Errorf("the example of Config's doc comment: %v", err)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[scheduler.Config](), reflect.TypeFor[scheduler.Tier](), reflect.TypeFor[scheduler.PluginOption]()} {
		writeFields(t, &b, typ, docs)
	}

	fmt.Fprintf(&b, "\n## Actions\n\n`actions` names them in the order each session runs them; left out, `%s`.\n\n", scheduler.DefaultActions)
	b.WriteString("| action | what it does |\n|---|---|\n")
	for _, name := range scheduler.ActionNames() {
		doc, ok := docs.types[name]
		if !ok {
			t.Errorf("action %s: no type %s with a doc comment in package scheduler", name, name)
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", name, cell(backtickFirst(doc, name)))
	}

	b.WriteString("\n## Plugins\n\nA plugin plays the [roles](#roles) of the interfaces it implements; " +
		"the [arguments](#arguments) of those that take any follow. Each plugin's package doc " +
		"(`scheduler/plugins/*/doc.go`) says more.\n\n| plugin | roles | what it does |\n|---|---|---|\n")
	for _, name := range scheduler.PluginNames() {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, strings.Join(scheduler.PluginRoles(name), ", "), cell(scheduler.PluginSummary(name)))
	}
	b.WriteString("\n### Roles\n\nThe interfaces of `scheduler/framework` that the scheduler looks for in each plugin.\n\n" +
		"| role | interface | meaning |\n|---|---|---|\n")
	for _, r := range scheduler.Roles() {
		doc, ok := iface.types[r.Interface]
		if !ok {
			t.Errorf("role %s: no interface %s with a doc comment in scheduler/framework", r.Name, r.Interface)
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s |\n", r.Name, r.Interface, cell(doc))
	}
	b.WriteString("\n### Arguments\n\nSet under the plugin's `arguments`; numbers may be written as numbers or strings.\n\n" +
		"| plugin | argument | default | meaning |\n|---|---|---|---|\n")
	for _, name := range scheduler.PluginNames() {
		for _, a := range scheduler.PluginArguments(name) {
			def := "—"
			if a.Default != "" {
				def = "`" + a.Default + "`"
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", name, a.Name, def, cell(a.Meaning))
		}
	}

	b.WriteString("\n## Profiles\n\nThe built-in configurations `--profile` names (`tessera scheduler`, `tessera simulate`, the chart's `scheduler.profile`).\n")
	for _, name := range scheduler.ProfileNames() {
		c, err := scheduler.Profile(name)
		if err != nil {
			t.Fatal(err)
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		// What the page shows must read back as the profile, as a --config file.
		if back, err := scheduler.ParseConfig(out); err != nil {
			t.Errorf("profile %s as YAML: %v", name, err)
		} else if again, _ := yaml.Marshal(back); !bytes.Equal(again, out) {
			t.Errorf("profile %s does not read back as itself:\n%s\nread back:\n%s", name, out, again)
		}
		fmt.Fprintf(&b, "\n### %s\n\n%s.\n\n```yaml\n%s```\n", name, scheduler.ProfileDescription(name), out)
	}
	golden.Check(t, schedulerConfigReference, b.Bytes())
}

// TestPluginArguments keeps the documented arguments true to the plugins: each is
// accepted, and every plugin refuses an argument it does not know.
func TestPluginArguments(t *testing.T) {
	validate := func(name string, args map[string]any) error {
		c := scheduler.Config{Tiers: []scheduler.Tier{{Plugins: []scheduler.PluginOption{{Name: name, Arguments: args}}}}}
		return c.Validate()
	}
	for _, name := range scheduler.PluginNames() {
		if scheduler.PluginSummary(name) == "" {
			t.Errorf("plugin %s has no summary (pluginSummaries)", name)
		}
		if len(scheduler.PluginRoles(name)) == 0 {
			t.Errorf("plugin %s plays no role", name)
		}
		for _, a := range scheduler.PluginArguments(name) {
			value := a.Default
			if value == "" {
				value = "1"
			}
			arg := strings.ReplaceAll(a.Name, "<name>", "tessera.dev/gpu")
			if err := validate(name, map[string]any{arg: value}); err != nil {
				t.Errorf("plugin %s, documented argument %s=%s: %v", name, arg, value, err)
			}
		}
		if err := validate(name, map[string]any{"no.such.argument": "1"}); err == nil {
			t.Errorf("plugin %s accepts an unknown argument", name)
		}
	}
}

// docComments are the doc comments of a package's types and struct fields.
type docComments struct {
	types  map[string]string            // type name to doc
	fields map[string]map[string]string // struct name to field name to doc
}

// goDocs reads the doc comments of the package in dir (its non-test files).
func goDocs(t *testing.T, dir string) docComments {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	d := docComments{types: map[string]string{}, fields: map[string]map[string]string{}}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gen.Specs) == 1 {
					doc = gen.Doc
				}
				if doc != nil {
					d.types[ts.Name.Name] = doc.Text()
				}
				if st, ok := ts.Type.(*ast.StructType); ok {
					d.fields[ts.Name.Name] = map[string]string{}
					for _, field := range st.Fields.List {
						for _, n := range field.Names {
							d.fields[ts.Name.Name][n.Name] = field.Doc.Text()
						}
					}
				}
			}
		}
	}
	return d
}

// writeFields writes typ's doc comment and a table of its fields: JSON name, type and
// doc comment, Go field names in the comments written as their JSON names.
func writeFields(t *testing.T, b *bytes.Buffer, typ reflect.Type, docs docComments) {
	t.Helper()
	fmt.Fprintf(b, "\n### %s\n\n", typ.Name())
	// A doc comment with an example is the file format's, shown above.
	if prose, example := splitExample(docs.types[typ.Name()]); example == "" {
		fmt.Fprintf(b, "%s\n\n", oneLine(backtickFirst(prose, typ.Name())))
	}
	b.WriteString("| field | type | meaning |\n|---|---|---|\n")
	var rename []string
	for f := range typ.Fields() {
		rename = append(rename, f.Name, "`"+jsonName(f)+"`")
	}
	for f := range typ.Fields() {
		doc := docs.fields[typ.Name()][f.Name]
		if doc == "" {
			t.Errorf("%s.%s has no doc comment", typ.Name(), f.Name)
		}
		doc = words.ReplaceAllStringFunc(doc, func(w string) string {
			for i := 0; i < len(rename); i += 2 {
				if w == rename[i] {
					return rename[i+1]
				}
			}
			if w == "DefaultActions" {
				return "`" + scheduler.DefaultActions + "`"
			}
			return w
		})
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", jsonName(f), typeName(f.Type), cell(doc))
	}
}

var words = regexp.MustCompile(`\b[A-Z][A-Za-z]*\b`)

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// typeName says what a field holds, as YAML writes it.
func typeName(typ reflect.Type) string {
	switch {
	case typ == reflect.TypeFor[scheduler.Duration]():
		return "duration (`90s`, `10m`)"
	case typ.Kind() == reflect.Slice:
		return fmt.Sprintf("list of [%s](#%s)", typ.Elem().Name(), strings.ToLower(typ.Elem().Name()))
	case typ.Kind() == reflect.Map:
		return "map of string to number or string"
	case typ.Kind() == reflect.Bool:
		return "boolean"
	case typ.Kind() == reflect.Int || typ.Kind() == reflect.Int64:
		return "integer"
	case typ.Kind() == reflect.Float64:
		return "number"
	}
	return typ.Kind().String()
}

// splitExample separates a doc comment's prose from its indented (code) lines.
func splitExample(doc string) (prose, code string) {
	for line := range strings.Lines(doc) {
		if s, ok := strings.CutPrefix(line, "\t"); ok {
			code += s
		} else {
			prose += line
		}
	}
	return prose, code
}

// backtickFirst marks the Go name that starts a doc comment as code.
func backtickFirst(doc, name string) string {
	if rest, ok := strings.CutPrefix(doc, name+" "); ok {
		return "`" + name + "` " + rest
	}
	return doc
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func cell(s string) string { return strings.ReplaceAll(oneLine(s), "|", `\|`) }
