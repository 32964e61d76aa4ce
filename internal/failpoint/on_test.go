//go:build faults

package failpoint

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestArmOverHTTP(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/"+string(WebhookReview), strings.NewReader("2*error"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("arm: %v %v", resp, err)
	}
	for i, want := range []bool{true, true, false} {
		if got := Inject(WebhookReview) != nil; got != want {
			t.Errorf("call %d: error %v, want %v", i, got, want)
		}
	}
	if s := Snapshot()[WebhookReview]; s.Reached != 3 || s.Fired != 2 || s.Action != "" {
		t.Errorf("stats %+v", s)
	}
	if err := Arm("nowhere/step", "crash"); err == nil {
		t.Error("an unknown point was armed")
	}
}
