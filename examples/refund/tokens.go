package main

import (
	"errors"
	"log/slog"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

const (
	// tokenEnv holds the caller's own token; the MCP client's configuration
	// sets it when it launches the server.
	tokenEnv = "REFUND_MCP_TOKEN"
	// tokensEnv holds the token table, a JSON object in the format of
	// package token, e.g. {"<token>": {"sub": "<subject>", "roles": ["<role>"]}}.
	tokensEnv = "REFUND_MCP_TOKENS"
)

// demoTokens is the token table used when tokensEnv is unset or empty.
func demoTokens() map[string]*policy.Principal {
	return map[string]*policy.Principal{
		"demo-token-alice": {Subject: "alice@example.com", Roles: []string{"support"}},
		"demo-token-bob":   {Subject: "bob@example.com", Roles: []string{"support"}},
	}
}

// loadTokens returns the token table of v, the value of tokensEnv: its
// table, or the demo table (with a warning) when it is unset or empty.
// Errors never quote a token.
func loadTokens(v string, log *slog.Logger) (*token.Table, error) {
	if v == "" {
		log.Warn("using the built-in demo tokens; set " + tokensEnv + " for real ones")
		return token.New(demoTokens())
	}
	t, err := token.Parse([]byte(v))
	if err != nil {
		return nil, errors.New(tokensEnv + ": " + err.Error())
	}
	return t, nil
}
