package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// TestUnauthenticatedStreamAndDeleteLogged pins the decision log of a GET
// (the event stream) or a DELETE (a session's end) refused for its token:
// like a refused POST, it gets a "deny" line naming the HTTP method and the
// outcome, without the token, and nothing reaches the downstream.
func TestUnauthenticatedStreamAndDeleteLogged(t *testing.T) {
	for _, tc := range []struct{ name, method, auth string }{
		{"get_no_token", http.MethodGet, ""},
		{"get_unknown_token", http.MethodGet, "Bearer not-a-token"},
		{"delete_no_token", http.MethodDelete, ""},
		{"delete_unknown_token", http.MethodDelete, "Bearer not-a-token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := newRig(t, nil)
			req, err := http.NewRequest(tc.method, rg.url+"/mcp", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Session-Id", "sess-1")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", resp.StatusCode)
			}
			if n := len(rg.down.log()); n != 0 {
				t.Fatalf("the downstream received %d requests, want none", n)
			}
			logs := rg.logs.String()
			var line string
			for l := range strings.Lines(logs) {
				if strings.Contains(l, "msg=deny") {
					line = l
				}
			}
			for _, want := range []string{"method=" + tc.method, "outcome=UNAUTHENTICATED", "cid="} {
				if !strings.Contains(line, want) {
					t.Errorf("deny line %q lacks %q; logs:\n%s", line, want, logs)
				}
			}
			if strings.Contains(logs, "not-a-token") {
				t.Errorf("logs contain the token:\n%s", logs)
			}
		})
	}
}

// TestAuthenticatorErrorWinsOverPrincipal pins that an Authenticator's
// error refuses the token even when it also returns a principal (one that
// looked the token up, then found it revoked or expired): 401 with
// error="invalid_token", nothing forwarded under that principal.
func TestAuthenticatorErrorWinsOverPrincipal(t *testing.T) {
	d := &downstream{}
	dsrv := newServer(t, d)
	auth := AuthenticatorFunc(func(context.Context, string) (*policy.Principal, error) {
		return &policy.Principal{Subject: "admin", Roles: []string{"admin"}}, errors.New("token revoked")
	})
	rg := newRigWith(t, dsrv, auth, discardLogger())
	got := rg.post(t, admin, call("3", "admin_reset_key", ""))
	if got.status != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401; body %s", got.status, got.body)
	}
	if wa := got.header.Get("WWW-Authenticate"); !strings.Contains(wa, `error="invalid_token"`) {
		t.Errorf("WWW-Authenticate %q, want the invalid_token challenge", wa)
	}
	if _, code, _ := rpcErr(t, got.body); code != CodeUnauthenticated {
		t.Errorf("code %d, want %d", code, CodeUnauthenticated)
	}
	if n := len(d.log()); n != 0 {
		t.Fatalf("the downstream received %d requests, want none", n)
	}
}

// TestAuthenticatorUnavailableLogsItsError pins that an authenticator that
// could not judge a token (ErrAuthenticatorUnavailable, or
// token.ErrIntrospectionFailed) is logged with its own error, the only
// place an operator learns why (the client's answer and the audit record
// say only that the token could not be checked), and that the client's
// answer does not carry that error.
func TestAuthenticatorUnavailableLogsItsError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"gateway_sentinel", fmt.Errorf("idp.internal: status 503: %w", ErrAuthenticatorUnavailable)},
		{"introspection_failed", fmt.Errorf("%w: idp.internal: status 503", token.ErrIntrospectionFailed)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsrv := newServer(t, &downstream{})
			auth := AuthenticatorFunc(func(context.Context, string) (*policy.Principal, error) { return nil, tc.err })
			var (
				mu   sync.Mutex
				logs bytes.Buffer
			)
			rg := newRigWith(t, dsrv, auth, slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil)))
			got := rg.post(t, viewer, call("4", "get_customer_record", ""))
			if got.status != http.StatusBadGateway {
				t.Fatalf("status %d, want 502; body %s", got.status, got.body)
			}
			if strings.Contains(got.body, "idp.internal") {
				t.Errorf("the answer carries the authenticator's error: %s", got.body)
			}
			mu.Lock()
			logged := logs.String()
			mu.Unlock()
			if !strings.Contains(logged, "idp.internal: status 503") {
				t.Errorf("the authenticator's error is not logged:\n%s", logged)
			}
		})
	}
}

// TestOnlyBearerSchemeCarriesAToken pins that a configured token is accepted
// only under the Bearer scheme (any case): under another scheme, or one that
// merely begins like it, it is refused with 401 and never forwarded, so that
// no other way of writing credentials reaches the token table.
func TestOnlyBearerSchemeCarriesAToken(t *testing.T) {
	rg := newRig(t, nil)
	body := call("9", "admin_reset_key", "")
	for _, auth := range []string{
		"Basic admin-token",
		"Token admin-token",
		"Bearerx admin-token",
		"Beare admin-token",
		"MAC admin-token",
	} {
		got := rg.post(t, auth, body)
		if got.status != http.StatusUnauthorized {
			t.Errorf("%q: status %d, want 401; body %s", auth, got.status, got.body)
		}
	}
	if n := len(rg.down.log()); n != 0 {
		t.Fatalf("the downstream received %d requests, want none", n)
	}
	if got := rg.post(t, "BEARER admin-token", body); got.status != http.StatusOK {
		t.Fatalf("upper-case Bearer scheme: status %d, want 200; body %s", got.status, got.body)
	}
}

// TestUnsendablePrincipalAnsweredAsInvalidToken pins that a token whose
// principal cannot be sent downstream (it fails token.CheckPrincipal) is
// answered exactly as an unknown token is: 401 with the same challenge,
// error="invalid_token" included, and the same error message, so that the
// client learns nothing of the authenticator's fault and is told to get
// another token.
func TestUnsendablePrincipalAnsweredAsInvalidToken(t *testing.T) {
	dsrv := newServer(t, &downstream{})
	auth := AuthenticatorFunc(func(_ context.Context, tok string) (*policy.Principal, error) {
		if tok == "unsendable" {
			return &policy.Principal{Subject: "mallory", Roles: []string{"viewer,admin"}}, nil
		}
		return nil, errors.New("unknown")
	})
	rg := newRigWith(t, dsrv, auth, discardLogger())
	body := call("6", "get_customer_record", "")
	bad := rg.post(t, "Bearer unsendable", body)
	unknown := rg.post(t, "Bearer unknown", body)
	if bad.status != http.StatusUnauthorized || unknown.status != http.StatusUnauthorized {
		t.Fatalf("status %d and %d, want 401 for both", bad.status, unknown.status)
	}
	if b, u := bad.header.Values("WWW-Authenticate"), unknown.header.Values("WWW-Authenticate"); len(b) != 1 ||
		len(u) != 1 || b[0] != u[0] || !strings.Contains(b[0], `error="invalid_token"`) {
		t.Errorf("WWW-Authenticate %q, want %q, with error=\"invalid_token\"", b, u)
	}
	msg := func(body string) string {
		var m struct {
			Error struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("answer %q: %v", body, err)
		}
		return m.Error.Message
	}
	if b, u := msg(bad.body), msg(unknown.body); b != u {
		t.Errorf("message %q, want the unknown token's %q", b, u)
	}
}
