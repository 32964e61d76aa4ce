package gitops

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	lua "github.com/yuin/gopher-lua"
)

// Health is what an Argo CD health check says of an object.
type Health struct {
	Status  string // Healthy, Progressing, Degraded
	Message string
}

// HealthScripts maps each of Tessera's kinds to its Argo CD health check in
// argocd/health, as argocd/kustomization.yaml registers them.
var HealthScripts = map[string]string{"Queue": "ready.lua", "AdmissionPolicy": "ready.lua", "ScaleDownPolicy": "ready.lua", "PodGroup": "podgroup.lua"}

// HealthCheck runs the Argo CD Lua health check of a kind on an object given as JSON,
// with the interpreter Argo CD embeds.
func HealthCheck(dir, kind string, object []byte) (Health, error) {
	script, ok := HealthScripts[kind]
	if !ok {
		return Health{}, fmt.Errorf("no health check for kind %s", kind)
	}
	src, err := os.ReadFile(filepath.Join(dir, script))
	if err != nil {
		return Health{}, err
	}
	var obj map[string]any
	if err := json.Unmarshal(object, &obj); err != nil {
		return Health{}, fmt.Errorf("object: %w", err)
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(string(src)); err != nil {
		return Health{}, fmt.Errorf("%s: %w", script, err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return Health{}, fmt.Errorf("%s returned %s, want a table", script, L.Get(-1).Type())
	}
	return Health{Status: lua.LVAsString(hs.RawGetString("status")), Message: lua.LVAsString(hs.RawGetString("message"))}, nil
}

// toLua converts decoded JSON into Lua values, as Argo CD hands objects to health checks.
func toLua(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range x {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range x {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(x)
	case float64:
		return lua.LNumber(x)
	case bool:
		return lua.LBool(x)
	}
	return lua.LNil
}
