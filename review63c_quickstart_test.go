package mcpguard_test

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rv63cBearer sets a bearer token on every request of a go-sdk client, as the
// README tells a client to.
type rv63cBearer struct{ tok string }

func (b rv63cBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.tok != "" {
		r.Header.Set("Authorization", "Bearer "+b.tok)
	}
	return http.DefaultTransport.RoundTrip(r)
}

type rv63cRecordIn struct {
	ID string `json:"id"`
}

type rv63cRefundIn struct {
	Order  string  `json:"order"`
	Amount float64 `json:"amount"`
}

// rv63cQuickStart builds the README's "One line per server" server as written,
// with a typed read and a typed write, and serves it over Streamable HTTP.
func rv63cQuickStart(t *testing.T, ran *[]string, hopts ...*mcp.StreamableHTTPOptions) (string, *audit.SQLSink) {
	t.Helper()
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "refunds", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "get_customer_record"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in rv63cRecordIn) (*mcp.CallToolResult, any, error) {
			*ran = append(*ran, "get_customer_record:"+mcpguard.PrincipalFromContext(ctx).Subject)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "record " + in.ID}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "trigger_refund"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in rv63cRefundIn) (*mcp.CallToolResult, any, error) {
			*ran = append(*ran, "trigger_refund:"+mcpguard.PrincipalFromContext(ctx).Subject)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refunded"}}}, nil, nil
		})

	// From here on, the README's lines, as written (errors checked).
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_customer_record", Class: policy.Read},
			{Name: "trigger_refund", Class: policy.Write, Confirm: true, Cost: 10},
		},
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"trigger_refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := token.Parse([]byte(`{"tok":{"sub":"ann","role":"support"}}`))
	if err != nil {
		t.Fatal(err)
	}
	db, err := audit.OpenSQLite(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sink, err := audit.NewSQL(ctx, db, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 30, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "trigger_refund", Max: 100, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	signer, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: key}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, mcpguard.BearerTokens(tokens), &mcpguard.Options{
		Audit: sink, Limiter: lim, Confirmer: signer,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(server); err != nil {
		t.Fatal(err)
	}
	var ho *mcp.StreamableHTTPOptions
	if len(hopts) > 0 {
		ho = hopts[0]
	}
	h := tokens.BindSessions(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, ho))
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		ts.Close()
		wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g.Wait(wctx)
		sink.Close()
	})
	return ts.URL + "/mcp", sink
}

func rv63cConnect(t *testing.T, url, tok string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rv63cBearer{tok}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, opts).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// TestReview63cQuickStartStrangers: the README's quick start, as written, over
// HTTP. A client without a token and one with a wrong token run nothing, see no
// tools, and every refused call is in the audit trail; the known user runs the
// read as herself, and the write (Confirm: true) does not run without a
// confirmation.
func TestReview63cQuickStartStrangers(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "stateful", true: "stateless"}[stateless], func(t *testing.T) {
			rv63cQuickStartStrangers(t, &mcp.StreamableHTTPOptions{Stateless: stateless})
		})
	}
}

func rv63cQuickStartStrangers(t *testing.T, ho *mcp.StreamableHTTPOptions) {
	ctx := context.Background()
	var ran []string
	url, sink := rv63cQuickStart(t, &ran, ho)

	for _, tok := range []string{"", "wrong"} {
		cs, err := rv63cConnect(t, url, tok, nil)
		if err != nil {
			// A connection refused outright is closed too.
			t.Logf("token %q: connect refused: %v", tok, err)
			continue
		}
		if res, err := cs.ListTools(ctx, nil); err == nil && len(res.Tools) > 0 {
			t.Errorf("token %q: tools/list gave %d tools to an unauthenticated client", tok, len(res.Tools))
		}
		for _, name := range []string{"get_customer_record", "trigger_refund"} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"id": "c1", "order": "o1", "amount": 5}})
			if err == nil && !res.IsError {
				t.Errorf("token %q: %s answered without error", tok, name)
				continue
			}
			d, ok := mcpguard.DenialOf(res, err)
			if !ok || d.Code != mcpguard.CodeUnauthenticated {
				t.Errorf("token %q: %s: denial %v %v, want UNAUTHENTICATED", tok, name, d, err)
			}
		}
	}
	if len(ran) != 0 {
		t.Fatalf("handlers ran for strangers: %v", ran)
	}

	// The known user: the read runs as ann; the write, needing a confirmation,
	// from a client without an elicitation handler, does not run.
	cs, err := rv63cConnect(t, url, "tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil || len(lt.Tools) != 2 {
		t.Fatalf("ann's tools/list: %v %v", lt, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_customer_record", Arguments: map[string]any{"id": "c1"}})
	if err != nil || res.IsError {
		t.Fatalf("ann's read: %v %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger_refund", Arguments: map[string]any{"order": "o1", "amount": 5}})
	d, ok := mcpguard.DenialOf(res, err)
	if !ok || d.Code != mcpguard.CodeConfirmationRequired {
		t.Errorf("ann's unconfirmed write: %v %v, want CONFIRMATION_REQUIRED", d, err)
	}
	if strings.Join(ran, ",") != "get_customer_record:ann" {
		t.Errorf("ran %v, want only ann's read", ran)
	}

	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := sink.Query(ctx, audit.Filter{Phase: audit.PhaseOutcome})
	if err != nil {
		t.Fatal(err)
	}
	var unauth, ok2, confirmReq int
	for _, e := range evs {
		switch {
		case e.Code == string(mcpguard.CodeUnauthenticated):
			unauth++
		case e.Allowed && e.Tool == "get_customer_record" && e.Subject == "ann":
			ok2++
		case e.Code == string(mcpguard.CodeConfirmationRequired):
			confirmReq++
		}
	}
	if unauth < 2 || ok2 != 1 || confirmReq != 1 {
		for _, e := range evs {
			t.Logf("record: %s %q %s allowed=%v code=%s", e.Phase, e.Subject, e.Tool, e.Allowed, e.Code)
		}
		t.Errorf("records: %d unauthenticated, %d ann reads, %d confirmation refusals", unauth, ok2, confirmReq)
	}
}

// TestReview63cQuickStartConfirm: on the README's server, ann's client with an
// elicitation handler confirms the refund (it runs once, as ann, with an
// intent record before it); a declined one does not run.
func TestReview63cQuickStartConfirm(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "stateful", true: "stateless"}[stateless], func(t *testing.T) {
			rv63cQuickStartConfirm(t, &mcp.StreamableHTTPOptions{Stateless: stateless})
		})
	}
}

func rv63cQuickStartConfirm(t *testing.T, ho *mcp.StreamableHTTPOptions) {
	ctx := context.Background()
	var ran []string
	url, sink := rv63cQuickStart(t, &ran, ho)
	for _, action := range []string{"decline", "accept"} {
		asked := 0
		cs, err := rv63cConnect(t, url, "tok", &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked++
				return &mcp.ElicitResult{Action: action}, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger_refund", Arguments: map[string]any{"order": "o1", "amount": 5}})
		d, denied := mcpguard.DenialOf(res, err)
		t.Logf("%s: asked %d, denial %v, err %v", action, asked, d, err)
		if asked != 1 {
			t.Errorf("%s: asked %d times", action, asked)
		}
		if action == "accept" && (err != nil || denied) {
			t.Errorf("accepted refund refused: %v %v", d, err)
		}
		if action == "decline" && (!denied || d.Code != mcpguard.CodeConfirmationRequired) {
			t.Errorf("declined refund: %v %v", d, err)
		}
	}
	if strings.Join(ran, ",") != "trigger_refund:ann" {
		t.Errorf("ran %v", ran)
	}
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := sink.Query(ctx, audit.Filter{Tool: "trigger_refund"})
	if err != nil {
		t.Fatal(err)
	}
	intents := 0
	for _, e := range evs {
		t.Logf("record: %s %q allowed=%v code=%s detail=%s cost=%v", e.Phase, e.Subject, e.Allowed, e.Code, e.Detail, e.Cost)
		if e.Phase == audit.PhaseIntent {
			intents++
		}
	}
	if intents != 1 {
		t.Errorf("%d intent records", intents)
	}
}
