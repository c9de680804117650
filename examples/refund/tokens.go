package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
)

const (
	// tokenEnv holds the caller's own token; the MCP client's configuration
	// sets it when it launches the server.
	tokenEnv = "REFUND_MCP_TOKEN"
	// tokensEnv holds the token table, a JSON object
	// {"<token>": {"sub": "<subject>", "roles": ["<role>", ...]}}.
	tokensEnv = "REFUND_MCP_TOKENS"
)

// demoTokens is the token table used when tokensEnv is unset.
func demoTokens() map[string]*policy.Principal {
	return map[string]*policy.Principal{
		"demo-token-alice": {Subject: "alice@example.com", Roles: []string{"support"}},
		"demo-token-bob":   {Subject: "bob@example.com", Roles: []string{"support"}},
	}
}

// parseTokens parses the token table of tokensEnv. Errors never quote a
// token.
func parseTokens(data string) (map[string]*policy.Principal, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(data), &raw); err != nil {
		return nil, fmt.Errorf("%s: must be a JSON object of token to {\"sub\", \"roles\"}", tokensEnv)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%s: no tokens", tokensEnv)
	}
	toks := make([]string, 0, len(raw))
	for t := range raw {
		toks = append(toks, t)
	}
	sort.Strings(toks)
	out := make(map[string]*policy.Principal, len(raw))
	for i, tok := range toks {
		var p struct {
			Sub   string   `json:"sub"`
			Role  string   `json:"role"`
			Roles []string `json:"roles"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw[tok]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil || p.Sub == "" || tok == "" {
			return nil, fmt.Errorf("%s: entry %d: want a non-empty token and {\"sub\": \"...\", \"roles\": [...]}", tokensEnv, i+1)
		}
		roles := p.Roles
		if p.Role != "" {
			roles = append(roles, p.Role)
		}
		out[tok] = &policy.Principal{Subject: p.Sub, Roles: roles}
	}
	return out, nil
}

// loadTokens returns the token store of v, the value of tokensEnv: its
// table, or the demo table (with a warning) when it is unset.
func loadTokens(v string, log *slog.Logger) (*mcpguard.TokenStore, error) {
	table := demoTokens()
	if v != "" {
		t, err := parseTokens(v)
		if err != nil {
			return nil, err
		}
		table = t
	} else {
		log.Warn("using the built-in demo tokens; set " + tokensEnv + " for real ones")
	}
	s, err := mcpguard.NewTokenStore(table)
	if err != nil {
		return nil, errors.New(tokensEnv + ": " + err.Error())
	}
	return s, nil
}
