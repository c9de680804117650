package mcpguard_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/testlog"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// review59aLateRT sends no token until on is set, then tok.
type review59aLateRT struct {
	tok string
	on  atomic.Bool
}

func (l *review59aLateRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if l.on.Load() {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+l.tok)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestReview59aLateUserNotWarned pins what doc.go ("Sessions over HTTP")
// says of the warning of an unbound session: a request that carries its
// verified user, behind the right binding, on a session opened without a
// token (bound to no one) is not warned of; its calls run, but a
// confirmation would be refused. The doc said a request "on a session with
// no verified user" was warned of, which reads as this case too.
func TestReview59aLateUserNotWarned(t *testing.T) {
	v, signClaims := review56IdP(t)
	tok := signClaims(jwt.MapClaims{"aud": "mcp", "sub": "ann", "exp": time.Now().Add(time.Hour).Unix()})
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "echo", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	var logs testlog.Buffer
	g, err := mcpguard.New(pol, mcpguard.Bearer(v), &mcpguard.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	url := review56EchoServer(t, g, func(h http.Handler) http.Handler { return token.BindSessions(v.Verifier(), h) })
	late := &review59aLateRT{tok: tok}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: late}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	late.on.Store(true)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("call with a verified user on a session opened without one: %v %+v", err, res)
	}
	if n := strings.Count(logs.String(), "bound to no one"); n != 0 {
		t.Errorf("%d warnings of an unbound session, want 0 (as doc.go says); logs:\n%s", n, logs.String())
	}
}
