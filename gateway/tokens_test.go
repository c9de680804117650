package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTokensErrors(t *testing.T) {
	tests := []struct {
		name, json string
	}{
		{name: "not_json", json: `{"tok-secret":`},
		{name: "array", json: `["admin"]`},
		{name: "empty_object", json: `{}`},
		{name: "empty_token", json: `{"":"admin"}`},
		{name: "token_with_space", json: `{"tok secret":"admin"}`},
		{name: "empty_role", json: `{"tok":""}`},
		{name: "no_roles", json: `{"tok":[]}`},
		{name: "role_with_comma", json: `{"tok":"admin,viewer"}`},
		{name: "unknown_field", json: `{"tok":{"sub":"a","role":"admin","admin":true}}`},
		{name: "number", json: `{"tok":5}`},
		{name: "newline_in_sub", json: `{"tok":{"sub":"a\nb","role":"admin"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTokens([]byte(tt.json))
			if err == nil {
				t.Fatalf("ParseTokens(%s) = nil error", tt.json)
			}
			if strings.Contains(err.Error(), "tok-secret") || strings.Contains(err.Error(), "tok secret") {
				t.Errorf("error quotes a token: %v", err)
			}
		})
	}
}

func TestTokensFromEnv(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	t.Setenv(TokensEnv, `{"tok-1":{"sub":"svc-etl","roles":["admin","ops"]}}`)
	s, err := TokensFromEnv(logger)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := s.Authenticate(context.Background(), "tok-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"svc-etl", "admin", "ops"}, append([]string{pr.Subject}, pr.Roles...)); diff != "" {
		t.Errorf("principal (-want +got):\n%s", diff)
	}
	if _, err := s.Authenticate(context.Background(), "admin-token"); err == nil {
		t.Error("demo token accepted while MCP_GATEWAY_TOKENS is set")
	}
	t.Setenv(TokensEnv, `not json`)
	if _, err := TokensFromEnv(logger); err == nil {
		t.Error("invalid MCP_GATEWAY_TOKENS accepted")
	}
	if logs.Len() != 0 {
		t.Errorf("unexpected warning: %s", logs.String())
	}
}

func TestTokensFromEnvUnsetUsesDemoWithWarning(t *testing.T) {
	t.Setenv(TokensEnv, "") // restored after the test
	unsetenv(t, TokensEnv)
	var logs bytes.Buffer
	s, err := TokensFromEnv(slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if pr, err := s.Authenticate(context.Background(), "admin-token"); err != nil || pr.Subject != "admin" {
		t.Errorf("demo admin token: %v %v", pr, err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "demo tokens") {
		t.Errorf("no warning logged: %q", logs.String())
	}
}
