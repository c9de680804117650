package mcpguard

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review41cLookup is what registry.lookup returned, and the listing time
// it left.
type review41cLookup struct {
	Entry, Refresh bool
	Gen            uint64
	Listed         time.Duration // since the start
}

// registry.lookup hands out the entry while the registry is fresh, and
// once relist has passed (at relist exactly too) claims the listing: it
// still answers with the entry, asks for a listing, and counts the
// listing as made now, so the next caller does not list again. A stale
// registry answers no entry and asks for a listing, however recent the
// last. Every answer carries the registry's generation.
func TestReview41cRegistryLookup(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	cases := []struct {
		name  string
		stale bool
		after time.Duration // since the last listing
		want  review41cLookup
	}{
		{name: "fresh", after: relist - time.Nanosecond, want: review41cLookup{Entry: true, Gen: 7}},
		{name: "just_listed", after: 0, want: review41cLookup{Entry: true, Gen: 7}},
		{name: "due_exactly", after: relist, want: review41cLookup{Entry: true, Refresh: true, Gen: 7, Listed: relist}},
		{name: "overdue", after: 5 * relist, want: review41cLookup{Entry: true, Refresh: true, Gen: 7, Listed: 5 * relist}},
		{name: "stale_fresh", stale: true, after: 0, want: review41cLookup{Refresh: true, Gen: 7}},
		{name: "stale_due", stale: true, after: 5 * relist, want: review41cLookup{Refresh: true, Gen: 7}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r registry
			r.init()
			r.byName["a"] = &toolEntry{tool: &mcp.Tool{Name: "a"}}
			r.listed, r.stale, r.gen = start, tc.stale, 7
			e, refresh, gen := r.lookup("a", start.Add(tc.after))
			got := review41cLookup{Entry: e != nil, Refresh: refresh, Gen: gen, Listed: r.listed.Sub(start)}
			if e != nil && e != r.byName["a"] {
				t.Errorf("lookup returned an entry other than the registry's")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lookup(%q, last listing + %v) with stale %v (-want +got):\n%s", "a", tc.after, tc.stale, diff)
			}
		})
	}
}

// A listing claimed by one caller is not claimed again by the next, who
// gets the entry and no refresh, until relist passes once more.
func TestReview41cRegistryLookupClaimOnce(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	var r registry
	r.init()
	r.byName["a"] = &toolEntry{tool: &mcp.Tool{Name: "a"}}
	r.listed = start
	var got []bool
	for _, after := range []time.Duration{relist, relist, 2*relist - time.Nanosecond, 2 * relist} {
		_, refresh, _ := r.lookup("a", start.Add(after))
		got = append(got, refresh)
	}
	if diff := cmp.Diff([]bool{true, false, false, true}, got); diff != "" {
		t.Errorf("refresh of lookups at relist, relist, 2*relist-1ns, 2*relist (-want +got):\n%s", diff)
	}
}

// sameTool says two tools are the same only when both encode, to the same
// bytes: two that cannot be encoded (a NaN in their _meta) are not the
// same, as nothing shows they are.
func TestReview41cSameTool(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	a := &mcp.Tool{Name: "a", InputSchema: schema}
	nan := func() *mcp.Tool { return &mcp.Tool{Name: "a", InputSchema: schema, Meta: mcp.Meta{"x": math.NaN()}} }
	cases := []struct {
		name string
		a, b *mcp.Tool
		want bool
	}{
		{"equal_copies", a, &mcp.Tool{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)}, true},
		{"same_pointer", a, a, true},
		{"description_differs", a, &mcp.Tool{Name: "a", InputSchema: schema, Description: "d"}, false},
		{"first_unencodable", nan(), a, false},
		{"second_unencodable", a, nan(), false},
		{"both_unencodable", nan(), nan(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameTool(tc.a, tc.b); got != tc.want {
				t.Errorf("sameTool(%+v, %+v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

// review41cGuard returns a Guard whose policy has a read rule for each of
// tools, logging to the returned buffer.
func review41cGuard(t *testing.T, tools ...string) (*Guard, *review41cLog) {
	t.Helper()
	return review41cGuardWith(t, Options{}, tools...)
}

// review41cGuardWith is review41cGuard with the options opts, whose
// Logger it replaces.
func review41cGuardWith(t *testing.T, opts Options, tools ...string) (*Guard, *review41cLog) {
	t.Helper()
	var rules []policy.ToolRule
	for _, n := range tools {
		rules = append(rules, policy.ToolRule{Name: n, Class: policy.Read})
	}
	pol, err := policy.New(policy.Config{Tools: rules})
	if err != nil {
		t.Fatal(err)
	}
	buf := &review41cLog{}
	opts.Logger = slog.New(slog.NewTextHandler(buf, nil))
	id := &Identity{Principal: &policy.Principal{Subject: "bob"}}
	g, err := New(pol, AuthenticatorFunc(func(context.Context, mcp.Request) (*Identity, error) { return id, nil }),
		&opts)
	if err != nil {
		t.Fatal(err)
	}
	return g, buf
}

// review41cLog is a log that handlers may write while a test reads it.
type review41cLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *review41cLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *review41cLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Guard.install keeps the entry of a tool listed again, the same *mcp.Tool
// or an equal copy, and compiles afresh one that changed: a tool that
// cannot be encoded (which is refused) is kept when it is the same
// pointer. It logs a refused tool once, when it compiles it, and nothing
// for a tool it accepts. The
// registry it leaves is fresh, and holds the listed tools only.
func TestReview41cInstallKeepsEntries(t *testing.T) {
	g, logs := review41cGuard(t, "a", "b", "c")
	schema := json.RawMessage(`{"type":"object"}`)
	a := &mcp.Tool{Name: "a", InputSchema: schema}
	b := &mcp.Tool{Name: "b", InputSchema: schema, Meta: mcp.Meta{"x": math.NaN()}}
	c := &mcp.Tool{Name: "c", InputSchema: schema}
	x := &mcp.Tool{Name: "x", InputSchema: schema} // no rule: refused
	g.update([]*mcp.Tool{a, b, c, x})
	if got := strings.Count(logs.String(), "tool refused"); got != 2 || !strings.Contains(logs.String(), "tool=b") || !strings.Contains(logs.String(), "tool=x") {
		t.Fatalf("logs after the first install: %d refusals, want 2, of b and x:\n%s", got, logs)
	}
	first := map[string]*toolEntry{}
	for n, e := range g.reg.byName {
		first[n] = e
	}
	g.reg.invalidate()
	g.update([]*mcp.Tool{
		{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)}, // an equal copy
		b, // the same pointer, which cannot be encoded
		{Name: "c", InputSchema: schema, Description: "changed"},
		{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`)}, // an equal copy
	})
	kept := map[string]bool{}
	for n, e := range g.reg.byName {
		kept[n] = first[n] == e
	}
	if diff := cmp.Diff(map[string]bool{"a": true, "b": true, "c": false, "x": true}, kept); diff != "" {
		t.Errorf("entries kept by the second install (-want +got):\n%s", diff)
	}
	if got := strings.Count(logs.String(), "tool refused"); got != 2 {
		t.Errorf("logs after the second install: %d refusals, want 2 (b's and x's entries are kept):\n%s", got, logs)
	}
	if _, ok := g.reg.get("a"); !ok {
		t.Errorf("get(%q) after an install: not found, want found (the install leaves the registry fresh)", "a")
	}
	g.update([]*mcp.Tool{a})
	if _, ok := g.reg.get("c"); ok {
		t.Errorf("get(%q) after an install without it: found, want not found", "c")
	}
}

// registry.get finds a listed tool only while the registry is fresh, and
// never a tool not listed.
func TestReview41cRegistryGet(t *testing.T) {
	cases := []struct {
		name      string
		stale     bool
		tool      string
		wantEntry bool
		wantOK    bool
	}{
		{"fresh_listed", false, "a", true, true},
		{"fresh_unlisted", false, "z", false, false},
		{"stale_listed", true, "a", true, false},
		{"stale_unlisted", true, "z", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r registry
			r.init()
			r.byName["a"] = &toolEntry{tool: &mcp.Tool{Name: "a"}}
			r.stale = tc.stale
			e, ok := r.get(tc.tool)
			if (e != nil) != tc.wantEntry || ok != tc.wantOK {
				t.Errorf("get(%q) with stale %v = (entry %v, %v), want (entry %v, %v)", tc.tool, tc.stale, e != nil, ok, tc.wantEntry, tc.wantOK)
			}
		})
	}
}

// Guard.updateSince installs a listing only when no change was recorded
// since it started (registry.invalidate moves the generation on), and
// says whether it did.
func TestReview41cUpdateSince(t *testing.T) {
	g, _ := review41cGuard(t, "a", "b")
	schema := json.RawMessage(`{"type":"object"}`)
	g.update([]*mcp.Tool{{Name: "a", InputSchema: schema}})
	gen := g.reg.generation()
	g.reg.invalidate()
	if got := g.reg.generation(); got != gen+1 {
		t.Fatalf("generation after invalidate = %d, want %d", got, gen+1)
	}
	if g.updateSince([]*mcp.Tool{{Name: "b", InputSchema: schema}}, gen) {
		t.Errorf("updateSince with the generation before a change = true, want false")
	}
	if _, ok := g.reg.byName["b"]; ok || !g.reg.stale {
		t.Errorf("updateSince with the generation before a change installed the listing (stale %v)", g.reg.stale)
	}
	if !g.updateSince([]*mcp.Tool{{Name: "b", InputSchema: schema}}, gen+1) {
		t.Errorf("updateSince with the current generation = false, want true")
	}
	if _, ok := g.reg.get("b"); !ok {
		t.Errorf("get(%q) after updateSince installed it: not found", "b")
	}
}
