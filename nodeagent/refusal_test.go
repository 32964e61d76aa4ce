package nodeagent

import (
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/record"

	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/nodeagent/deviceplugin"
)

// An allocation the device plugin refuses because of its pod is a Warning event on the
// pod and a count of tessera_device_plugin_refusals_total by reason.
func TestDevicePluginRefusalsReported(t *testing.T) {
	rec := record.NewFakeRecorder(4)
	a, err := New(Config{NodeName: "n1", DevicePluginDir: t.TempDir()},
		Deps{Registry: prometheus.NewRegistry(), Recorder: rec, Pods: deviceplugin.KubePods{}, Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	a.refused(&deviceplugin.Refusal{Pod: apitest.MakePod("forged", "team").Obj(), Reason: deviceplugin.RefusedNotBound})
	if n := testutil.ToFloat64(a.metrics.Refused(deviceplugin.RefusedNotBound)); n != 1 {
		t.Errorf("refusals counted %v, want 1", n)
	}
	select {
	case e := <-rec.Events:
		if !strings.HasPrefix(e, "Warning "+ReasonGPUAssignmentRefused) {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event")
	}
}
