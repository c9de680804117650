package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review42bAuth is an Authenticator whose answer a test changes between
// requests, and which records the server session of the last request it
// saw. (review41cGuardWith's authenticator always answers bob, and no
// other rig of the package's internal tests gives the test the
// *mcp.ServerSession of a client it connected.)
type review42bAuth struct {
	answer atomic.Pointer[review42bAnswer]
	last   atomic.Pointer[mcp.ServerSession]
}

// review42bAnswer is what a review42bAuth answers.
type review42bAnswer struct {
	id  *Identity
	err error
}

func (a *review42bAuth) Authenticate(_ context.Context, req mcp.Request) (*Identity, error) {
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
		a.last.Store(ss)
	}
	an := a.answer.Load()
	return an.id, an.err
}

// review42bServe installs a guard with a read rule for "a" on a server
// with the tool "a" and the resource file:///r (below which b sees the
// requests), whose callers auth authenticates (at first as bob), and
// returns the guard, its log and a client session on it.
func review42bServe(t *testing.T, b *review41cBelow) (*Guard, *review41cLog, *review42bAuth, *mcp.ClientSession) {
	t.Helper()
	g, logs := review41cGuard(t, "a")
	auth := &review42bAuth{}
	auth.answer.Store(&review42bAnswer{id: &Identity{Principal: &policy.Principal{Subject: "bob"}}})
	g.authn = auth // before Install: no request has run yet
	cs := review41cServeThen(t, g, b, func(s *mcp.Server) {
		s.AddResource(&mcp.Resource{URI: "file:///r", Name: "r"},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{
					Cacheable: mcp.Cacheable{TTLMs: 5000, CacheScope: "public"},
					Contents:  []*mcp.ResourceContents{{URI: req.Params.URI, Text: "r"}},
				}, nil
			})
	}, "")
	return g, logs, auth, cs
}

// A resource read answered through the guard is marked CacheScope
// "private" (its contents may be the caller's own), whatever scope its
// handler gave; the rest of the result is the handler's.
func TestReview42bReadIsPrivate(t *testing.T) {
	_, _, _, cs := review42bServe(t, &review41cBelow{})
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///r"})
	if err != nil {
		t.Fatalf("ReadResource(file:///r): %v", err)
	}
	type read struct {
		TTLMs      int
		CacheScope string
		Texts      []string
	}
	got := read{TTLMs: res.TTLMs, CacheScope: res.CacheScope}
	for _, c := range res.Contents {
		got.Texts = append(got.Texts, c.Text)
	}
	want := read{TTLMs: 5000, CacheScope: "private", Texts: []string{"r"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadResource(file:///r) (-want +got):\n%s", diff)
	}
}

// review42bRefusal is how a request the guard refused for its caller went.
type review42bRefusal struct {
	Code             string // the refusal's code, from the JSON-RPC error's data
	Logged           bool   // the guard logged the refusal with its correlation id
	ToolsView        bool   // the session kept its view of the tools
	ResView          bool   // and of the resources
	HasCorrelationID bool   // the refusal carries a correlation id
}

// A request other than tools/call whose caller the guard cannot
// authenticate (an authenticator's error, even beside an identity; no
// identity; no principal; no subject) is refused with a JSON-RPC error,
// logged under the correlation id the error carries. The session's views
// are turned off when the refusal is UNAUTHENTICATED, so that it is told
// of no change until it lists again; a refusal that says nothing of who
// the caller is (a cap, a provider down) leaves them.
func TestReview42bRefusedCaller(t *testing.T) {
	bob := &Identity{Principal: &policy.Principal{Subject: "bob"}}
	cases := []struct {
		name   string
		answer review42bAnswer
		want   review42bRefusal
	}{
		{"error_beside_identity", review42bAnswer{id: bob, err: errors.New("token revoked")},
			review42bRefusal{Code: "UNAUTHENTICATED", Logged: true, HasCorrelationID: true}},
		{"no_identity", review42bAnswer{},
			review42bRefusal{Code: "UNAUTHENTICATED", Logged: true, HasCorrelationID: true}},
		{"no_principal", review42bAnswer{id: &Identity{}},
			review42bRefusal{Code: "UNAUTHENTICATED", Logged: true, HasCorrelationID: true}},
		{"no_subject", review42bAnswer{id: &Identity{Principal: &policy.Principal{Roles: []string{"admin"}}}},
			review42bRefusal{Code: "UNAUTHENTICATED", Logged: true, HasCorrelationID: true}},
		// (Not UPSTREAM_UNAVAILABLE, which leaves the views too: its -32003 is
		// the go-sdk client's own "client is closing", see doc.go.)
		{"concurrency_capped", review42bAnswer{err: Deny(CodeConcurrencyLimitExceeded, "too many calls")},
			review42bRefusal{Code: "CONCURRENCY_LIMIT_EXCEEDED", Logged: true, ToolsView: true, ResView: true, HasCorrelationID: true}},
		{"rate_limited", review42bAnswer{id: bob, err: Deny(CodeRateLimitExceeded, "slow down")},
			review42bRefusal{Code: "RATE_LIMIT_EXCEEDED", Logged: true, ToolsView: true, ResView: true, HasCorrelationID: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, logs, auth, cs := review42bServe(t, &review41cBelow{})
			ctx := context.Background()
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatalf("ListTools as bob: %v", err)
			}
			if _, err := cs.ListResources(ctx, nil); err != nil {
				t.Fatalf("ListResources as bob: %v", err)
			}
			ss := auth.last.Load()
			auth.answer.Store(&tc.answer)
			res, err := cs.ListTools(ctx, nil)
			we := wireError(err)
			if we == nil {
				t.Fatalf("ListTools = %v, %v; want a JSON-RPC error", res, err)
			}
			var data struct {
				Code          string `json:"code"`
				CorrelationID string `json:"correlation_id"`
			}
			if err := json.Unmarshal(we.Data, &data); err != nil {
				t.Fatalf("the refusal's data %s: %v", we.Data, err)
			}
			line := `level=WARN msg="mcpguard: request refused" method=tools/list code=` + data.Code + " correlation_id=" + data.CorrelationID + "\n"
			_, toolsView := g.views.caller(ss)
			_, resView := g.res.caller(ss)
			got := review42bRefusal{
				Code:             data.Code,
				Logged:           strings.Contains(logs.String(), line),
				ToolsView:        toolsView,
				ResView:          resView,
				HasCorrelationID: data.CorrelationID != "",
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ListTools refused (-want +got):\n%s\nlog:\n%s", diff, logs)
			}
		})
	}
}

// A tools/list whose listing below the guard fails is answered with the
// listing's own error. (A nil result with no error, which go-sdk v1.8.0
// answers as an internal error of its own, would hide why.)
func TestReview42bListingFails(t *testing.T) {
	b := &review41cBelow{}
	_, _, _, cs := review42bServe(t, b)
	b.fail.Store(true)
	res, err := cs.ListTools(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "listing failed") {
		t.Fatalf("ListTools while the listing below fails = %+v, %v; want the listing's error", res, err)
	}
}

// refused decides from the registry's entry for a tool only when the entry
// is of that tool (the same *mcp.Tool or an equal copy); a listed tool of
// the same name that differs (the registry not yet updated) is compiled
// under the policy, so that a tool changed to one the guard refuses is not
// listed on the strength of its former entry, nor a tool changed to one it
// accepts hidden.
func TestReview42bRefusedOfChangedTool(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	no := false
	ok := func() *mcp.Tool { return &mcp.Tool{Name: "a", InputSchema: schema} }
	// A read in the policy that says it may write: refused (CheckTool).
	bad := func() *mcp.Tool {
		return &mcp.Tool{Name: "a", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: no}}
	}
	okTool, badTool := ok(), bad()
	cases := []struct {
		name       string
		registered *mcp.Tool // nil: the registry holds no entry
		listed     *mcp.Tool
		want       bool
	}{
		{"same_accepted", okTool, okTool, false},
		{"same_refused", badTool, badTool, true},
		{"copy_accepted", okTool, ok(), false},
		{"copy_refused", badTool, bad(), true},
		{"changed_to_refused", okTool, bad(), true},
		{"changed_to_accepted", badTool, ok(), false},
		{"unregistered_accepted", nil, ok(), false},
		{"unregistered_refused", nil, bad(), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := review41cGuard(t, "a")
			if tc.registered != nil {
				g.update([]*mcp.Tool{tc.registered})
			}
			if got := g.refused(g.pol.Load(), tc.listed); got != tc.want {
				t.Errorf("refused(%+v) with %+v registered = %v, want %v", tc.listed, tc.registered, got, tc.want)
			}
		})
	}
}
