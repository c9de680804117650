package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestAuthenticatorPrincipalChecked checks that a principal from a custom
// Authenticator that identity headers would turn into another identity (a
// role with a comma: two roles downstream; a subject with outer spaces:
// the trimmed subject downstream) is refused with 401, logged, and never
// forwarded, while a well-formed one passes.
func TestAuthenticatorPrincipalChecked(t *testing.T) {
	d := &downstream{}
	dsrv := httptest.NewServer(d)
	t.Cleanup(dsrv.Close)
	principals := map[string]*policy.Principal{
		"comma":  {Subject: "mallory", Roles: []string{"viewer,admin"}},
		"space":  {Subject: " admin", Roles: []string{"viewer"}},
		"ctl":    {Subject: "eve\x7f", Roles: []string{"viewer"}},
		"noRole": {Subject: "ok", Roles: []string{""}},
		"good":   {Subject: "alice", Roles: []string{"viewer"}},
	}
	auth := AuthenticatorFunc(func(ctx context.Context, tok string) (*policy.Principal, error) {
		return principals[tok], nil
	})
	var (
		mu   sync.Mutex
		logs bytes.Buffer
	)
	rg := newRigWith(t, dsrv, auth, slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil)))
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, tok := range []string{"comma", "space", "ctl", "noRole"} {
		r := rg.post(t, "Bearer "+tok, body)
		if r.status != http.StatusUnauthorized {
			t.Errorf("principal %q: status %d, want 401; body %s", tok, r.status, r.body)
		}
	}
	if n := len(d.log()); n != 0 {
		t.Fatalf("%d refused requests reached the downstream: %+v", n, d.log())
	}
	mu.Lock()
	logged := logs.String()
	mu.Unlock()
	if !strings.Contains(logged, "cannot be sent downstream") {
		t.Errorf("the authenticator's fault is not logged: %s", logged)
	}
	if r := rg.post(t, "Bearer good", body); r.status != http.StatusOK {
		t.Fatalf("well-formed principal: status %d, body %s", r.status, r.body)
	}
	got := d.log()
	if len(got) != 1 || got[0].Header.Get(HeaderSubject) != "alice" || got[0].Header.Get(HeaderRole) != "viewer" {
		t.Fatalf("forwarded: %+v", got)
	}
}

// newRigWith is newRig with a given downstream server, authenticator and
// logger.
func newRigWith(t *testing.T, dsrv *httptest.Server, auth Authenticator, log *slog.Logger) *rig {
	t.Helper()
	g, err := New(dsrv.URL+"/mcp", auth, &Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	t.Cleanup(gw.Close)
	return &rig{url: gw.URL, gw: gw, dsrv: dsrv}
}
