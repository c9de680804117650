package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type rv63cLockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *rv63cLockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *rv63cLockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestReview63cNoSecretsEcho: a wrong bearer token, a real one, and argument
// values never appear in answers, audit records or log lines.
func TestReview63cNoSecretsEcho(t *testing.T) {
	ctx := context.Background()
	const good = "tok-GOODSECRET123"
	const bad = "tok-BADSECRET456"
	const argv = "ARGVALUE789"
	tokens, err := token.Parse([]byte(`{"` + good + `": {"sub": "ann", "role": "viewer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{
		Tools:     []policy.ToolRule{{Name: "get_a", Class: policy.Read}, {Name: "admin_a", Class: policy.Read}},
		RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	logs := &rv63cLockedBuf{}
	sink := &memSink{}
	r := &rv63cRan{}
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "get_a", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"integer"}}}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r.add(ctx, "get_a")
			return &mcp.CallToolResult{}, nil
		})
	rv63cAddRaw(s, r, "admin_a")
	g, err := mcpguard.New(pol, mcpguard.BearerTokens(tokens), &mcpguard.Options{Audit: sink, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(s); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(tokens.BindSessions(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)))
	t.Cleanup(ts.Close)
	var answers []string
	for _, tok := range []string{bad, good} {
		cs, err := rv63cConnect(t, ts.URL, tok, nil)
		if err != nil {
			answers = append(answers, err.Error())
			continue
		}
		for _, name := range []string{"get_a", "admin_a", "nope" + argv} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"q": argv, argv: 1}})
			b, _ := json.Marshal(res)
			answers = append(answers, string(b), func() string {
				if err != nil {
					return err.Error()
				}
				return ""
			}())
		}
		_, err = cs.ListTools(ctx, nil)
		if err != nil {
			answers = append(answers, err.Error())
		}
	}
	recs, _ := json.Marshal(sink.all())
	for what, text := range map[string]string{"answers": strings.Join(answers, "\n"), "records": string(recs), "logs": logs.String()} {
		for _, secret := range []string{good, bad, "GOODSECRET", "BADSECRET"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s contain %q", what, secret)
			}
		}
		if what != "answers" && strings.Contains(strings.ReplaceAll(text, "nope"+argv, ""), argv) {
			t.Errorf("%s contain the argument value: %s", what, text)
		}
	}
	if got := r.all(); len(got) != 0 {
		t.Errorf("ran %v", got)
	}
}

// TestReview63cFromTokenNotOverHTTP: FromToken "is FromEnv for a token obtained
// elsewhere", and FromEnv does not lend its identity to a client over HTTP.
func TestReview63cFromTokenNotOverHTTP(t *testing.T) {
	ctx := context.Background()
	tokens, err := token.Parse([]byte(`{"tok-ann": {"sub": "ann", "role": "admin"}}`))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "get_a", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("RV63C_TOKEN", "tok-ann")
	for name, authn := range map[string]mcpguard.Authenticator{
		"FromToken": mcpguard.FromToken("tok-ann", tokens),
		"FromEnv":   mcpguard.FromEnv("RV63C_TOKEN", tokens),
	} {
		for _, stateless := range []bool{false, true} {
			r := &rv63cRan{}
			s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
			rv63cAddRaw(s, r, "get_a")
			g, err := mcpguard.New(pol, authn, &mcpguard.Options{Audit: &memSink{}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Install(s); err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
				&mcp.StreamableHTTPOptions{Stateless: stateless}))
			t.Cleanup(ts.Close)
			cs, err := rv63cConnect(t, ts.URL, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_a", Arguments: map[string]any{}})
			if d, ok := mcpguard.DenialOf(res, err); !ok || d.Code != mcpguard.CodeUnauthenticated {
				t.Errorf("%s stateless=%v: %v %v, want UNAUTHENTICATED", name, stateless, d, err)
			}
			if got := r.all(); len(got) != 0 {
				t.Errorf("%s stateless=%v: ran %v", name, stateless, got)
			}
		}
	}
}

// TestReview63cForgotBindSessions: the README's server without
// tokens.BindSessions: the package doc promises a warning, once, when the
// guard authenticates by bearer token a request on a session with an id that
// carries no verified user.
func TestReview63cForgotBindSessions(t *testing.T) {
	ctx := context.Background()
	tokens, err := token.Parse([]byte(`{"tok": {"sub": "ann", "role": "support"}}`))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "get_a", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	logs := &rv63cLockedBuf{}
	r := &rv63cRan{}
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	rv63cAddRaw(s, r, "get_a")
	g, err := mcpguard.New(pol, mcpguard.BearerTokens(tokens), &mcpguard.Options{Audit: &memSink{}, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(s); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	for range 2 {
		cs, err := rv63cConnect(t, ts.URL, "tok", nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_a", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("%v %v", res, err)
		}
		cs.ListTools(ctx, nil)
	}
	warns := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") {
			warns++
			t.Log(line)
		}
	}
	if warns != 1 {
		t.Errorf("%d warnings, want 1", warns)
	}
}
