package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview65cRESTRefusalRecordsAgreeWithMCP: the same call by alice over
// /mcp and over REST leaves outcome records that agree, field for field,
// for every kind of refusal the example can meet (an unknown tool, bad
// arguments, a write off the allowlist, the call rate) and for a dry run,
// but for what names the transport (session, correlation id, protocol
// version, client name). Before, the REST record of a call of an unknown
// tool had no args_sha256, where the guard's record of the same call over
// /mcp has the arguments' hash (the DESIGN's audit record, every call's):
// REST refused it before reading the body; so was the record of a call
// without a token. A refusal for a bad X-Session-Id (no /mcp counterpart)
// of a well-formed body has its hash too; a malformed body's has none.
func TestReview65cRESTRefusalRecordsAgreeWithMCP(t *testing.T) {
	type kase struct {
		name, tool, args, code string
		writes                 bool
	}
	for _, k := range []kase{
		{"unknown tool", "no_such_tool", `{"query":"deploy"}`, "TOOL_NOT_FOUND", false},
		{"bad arguments", "search_docs", `{"query":5}`, "INVALID_ARGUMENTS", false},
		{"write not allowed", "create_ticket", `{"title":"t","body":"b"}`, "WRITE_NOT_ALLOWED", false},
		{"dry run", "create_ticket", `{"title":"t","body":"b"}`, "", true},
		{"rate limit", "search_docs", `{"query":"deploy"}`, "RATE_LIMIT_EXCEEDED", false},
	} {
		t.Run(k.name, func(t *testing.T) {
			ta := newKeyedTestApp(t, func(c *config) {
				if k.writes {
					allowWrites(c)
				}
			}, []byte("0123456789abcdef0123456789abcdef"))
			base := startHTTP(t, ta)
			cs := connectHTTP(t, base, "token-alice")
			var args map[string]any
			if err := json.Unmarshal([]byte(k.args), &args); err != nil {
				t.Fatal(err)
			}
			calls := 1
			if k.code == "RATE_LIMIT_EXCEEDED" {
				calls = 6
			}
			for range calls {
				_, _ = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: k.tool, Arguments: args})
				restPost(t, base, k.tool, "token-alice", "s1", `{"arguments":`+k.args+`}`)
			}
			mcpRec := lastRecord(t, ta, cs.ID())
			restRec := lastRecord(t, ta, restSessionID("s1", "alice"))
			if mcpRec.Code != k.code || restRec.Code != k.code {
				t.Fatalf("codes: MCP %q, REST %q, want %q", mcpRec.Code, restRec.Code, k.code)
			}
			if mcpRec.ArgsSHA256 == "" {
				t.Fatalf("the guard's record over /mcp has no args_sha256: %+v", mcpRec)
			}
			if got, want := view65c(restRec), view65c(mcpRec); got != want {
				t.Errorf("%s: the REST record differs from the /mcp one:\nREST %+v\nMCP  %+v", k.name, got, want)
			}
		})
	}

	t.Run("unauthenticated", func(t *testing.T) {
		ta := newKeyedTestApp(t, nil, []byte("0123456789abcdef0123456789abcdef"))
		base := startHTTP(t, ta)
		cs := connectHTTP(t, base, "")
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": "deploy"}})
		if c := toolCode(t, res, err); c != "UNAUTHENTICATED" {
			t.Fatalf("over /mcp without a token: %q", c)
		}
		if r := restPost(t, base, "search_docs", "", "s1", `{"arguments":{"query":"deploy"}}`); r.status != 401 {
			t.Fatalf("over REST without a token: %d", r.status)
		}
		mcpRec := lastRecord(t, ta, cs.ID())
		evs := ta.events(t, audit.Filter{Code: "UNAUTHENTICATED"})
		var restRec *audit.Event
		for i := range evs {
			if evs[i].SessionID == "" {
				restRec = &evs[i]
			}
		}
		if restRec == nil {
			t.Fatalf("no REST record: %v", rows(evs))
		}
		if got, want := view65c(*restRec), view65c(mcpRec); got != want || want.ArgsSHA256 == "" {
			t.Errorf("unauthenticated: the REST record differs from the /mcp one:\nREST %+v\nMCP  %+v", got, want)
		}
	})

	t.Run("bad X-Session-Id", func(t *testing.T) {
		ta := newKeyedTestApp(t, nil, []byte("0123456789abcdef0123456789abcdef"))
		base := startHTTP(t, ta)
		want := audit.ArgsHMAC([]byte("0123456789abcdef0123456789abcdef"), json.RawMessage(`{"query":"deploy"}`))
		if r := restPost(t, base, "search_docs", "token-alice", "bad id", `{"arguments":{"query":"deploy"}}`); r.status != 400 {
			t.Fatalf("bad X-Session-Id: %d", r.status)
		}
		if r := restPost(t, base, "search_docs", "token-alice", "", `{"arguments":[1]}`); r.status != 400 {
			t.Fatalf("malformed body: %d", r.status)
		}
		evs := ta.events(t, audit.Filter{Subject: "alice"})
		if len(evs) != 2 {
			t.Fatalf("%d records, want 2: %v", len(evs), rows(evs))
		}
		if evs[0].ArgsSHA256 != want {
			t.Errorf("bad X-Session-Id record: args_sha256 %q, want %q (the body was well-formed)", evs[0].ArgsSHA256, want)
		}
		if evs[1].ArgsSHA256 != "" {
			t.Errorf("malformed body record: args_sha256 %q, want none", evs[1].ArgsSHA256)
		}
	})
}

// recordView is an outcome record without what names its transport.
type recordView struct {
	Subject, Tool, Class, Code, ArgsSHA256 string
	Roles                                  string
	Allowed, DryRun                        bool
	Cost                                   float64
}

func view65c(e audit.Event) recordView {
	roles, _ := json.Marshal(e.Roles)
	return recordView{e.Subject, e.Tool, e.Class, e.Code, e.ArgsSHA256, string(roles), e.Allowed, e.DryRun, e.Cost}
}

// lastRecord is the last outcome record of session sid in audit.jsonl and
// in audit_log, which must agree.
func lastRecord(t *testing.T, ta *testApp, sid string) audit.Event {
	t.Helper()
	if err := ta.flush(); err != nil {
		t.Fatal(err)
	}
	f := audit.Filter{SessionID: sid, Phase: audit.PhaseOutcome}
	fromSQL, err := ta.query(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	fromJSONL, err := audit.QueryJSONL(ta.jsonlPath(), f)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromSQL) == 0 || len(fromSQL) != len(fromJSONL) {
		t.Fatalf("session %s: %d records in audit_log, %d in audit.jsonl", sid, len(fromSQL), len(fromJSONL))
	}
	a, b := fromSQL[len(fromSQL)-1], fromJSONL[len(fromJSONL)-1]
	if view65c(a) != view65c(b) {
		t.Fatalf("session %s: audit_log %+v, audit.jsonl %+v", sid, view65c(a), view65c(b))
	}
	return a
}
