package integration

import (
	"fmt"
	"os"
	"testing"

	"github.com/tessera-gpu/tessera/test/testenv"
)

// env is shared by the package's tests: one API server start (about 5 s) for all.
var (
	env    *testenv.Env
	envErr error
)

func TestMain(m *testing.M) {
	env, envErr = testenv.New(testenv.Options{})
	code := m.Run()
	stopTenantEnv()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop API server:", err)
		}
	}
	os.Exit(code)
}

func requireEnv(t *testing.T) *testenv.Env {
	t.Helper()
	if envErr != nil {
		testenv.SkipOrFail(t, envErr)
	}
	return env
}
