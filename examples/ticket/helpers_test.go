package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// clock is a fake clock for the guard and its limiter.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// testConfig returns the shipped configuration, changed by mutate.
func testConfig(t *testing.T, mutate func(*config)) *config {
	t.Helper()
	c, _, err := loadConfig("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(c)
	}
	return c
}

// testApp is an app under test with a fake clock, its ticket spy, the
// [DRY RUN] log and a REST caller.
type testApp struct {
	*app
	clock   *clock
	tickets *TicketSystem
	marks   *syncBuffer
	rest    *restSessions
}

func newTestApp(t *testing.T, mutate func(*config)) *testApp {
	t.Helper()
	return newKeyedTestApp(t, mutate, nil)
}

// newKeyedTestApp is newTestApp with the audit argument-hash key key (nil:
// a random one).
func newKeyedTestApp(t *testing.T, mutate func(*config), key []byte) *testApp {
	t.Helper()
	ta := &testApp{clock: newClock(), tickets: &TicketSystem{}, marks: &syncBuffer{}}
	a, err := newApp(appOptions{
		ConfigName: "server.yaml", Config: testConfig(t, mutate), AuditDir: t.TempDir(),
		Tickets: ta.tickets, Now: ta.clock.Now,
		Marks:   slog.New(slog.NewTextHandler(ta.marks, nil)),
		ArgsKey: key,
	})
	if err != nil {
		t.Fatal(err)
	}
	ta.app = a
	ta.rest = newRESTSessions(a.server, a.authn)
	t.Cleanup(func() {
		ta.rest.Close()
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	})
	return ta
}

// outcome is what a call returned: its structured content, and for a
// refusal the error object's code.
type outcome struct {
	content map[string]any
	code    string // "" when the call succeeded
	wire    *jsonrpc.Error
}

// call calls tool as the owner of tok ("" for none) in REST session sid.
func (ta *testApp) call(t *testing.T, tok, sid, tool string, args any) outcome {
	t.Helper()
	h := http.Header{}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ta.rest.call(context.Background(), h, sid, tool, raw)
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return outcome{wire: we}
	}
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	m, _ := res.StructuredContent.(map[string]any)
	o := outcome{content: m}
	if res.IsError {
		e, _ := m["error"].(map[string]any)
		o.code, _ = e["code"].(string)
		if o.code == "" {
			t.Fatalf("call %s: error result without a code: %v", tool, m)
		}
	}
	return o
}

// docIDs returns the ids of a search_docs result.
func docIDs(t *testing.T, o outcome) []string {
	t.Helper()
	if o.code != "" || o.wire != nil {
		t.Fatalf("search_docs refused: %s %v", o.code, o.wire)
	}
	var ids []string
	rs, _ := o.content["results"].([]any)
	for _, r := range rs {
		ids = append(ids, r.(map[string]any)["id"].(string))
	}
	return ids
}

// events returns the audit outcome records of SQLite matching f.
func (ta *testApp) events(t *testing.T, f audit.Filter) []audit.Event {
	t.Helper()
	f.Phase = audit.PhaseOutcome
	evs, err := ta.query(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// allowWrites puts create_ticket on the allowlist.
func allowWrites(c *config) { c.AllowedWriteTools = []string{"create_ticket"} }

func ticketArgs() map[string]any {
	return map[string]any{"title": "Broken build", "body": "CI red on main"}
}
