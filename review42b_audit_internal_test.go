package mcpguard

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review42bKeeper is an audit.Keeper that records what it is given: each
// event, and the arguments Keep was handed (nil for Write).
type review42bKeeper struct {
	mu  sync.Mutex
	got []review42bKept
}

// review42bKept is one record a review42bKeeper was given.
type review42bKept struct {
	Phase      audit.Phase
	ArgsSHA256 string
	Args       string // as Keep was handed them; "" for none
	ByKeep     bool
}

func (k *review42bKeeper) Write(_ context.Context, e *audit.Event) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.got = append(k.got, review42bKept{Phase: e.Phase, ArgsSHA256: e.ArgsSHA256})
	return nil
}

func (k *review42bKeeper) Keep(_ context.Context, e *audit.Event, args json.RawMessage) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.got = append(k.got, review42bKept{Phase: e.Phase, ArgsSHA256: e.ArgsSHA256, Args: string(args), ByKeep: true})
	return nil
}

func (k *review42bKeeper) records() []review42bKept {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]review42bKept(nil), k.got...)
}

// review42bWrapped returns the tool r (a read) or w (a write the policy
// allows) wrapped by a guard with opts that takes every caller for bob.
// (review41cGuardWith's policy has reads only; a write needs a rule and
// the write allowlist.)
func review42bWrapped(t *testing.T, opts Options, name string) mcp.ToolHandler {
	t.Helper()
	pol := review41bPolicy(t, policy.Config{
		Tools:          []policy.ToolRule{{Name: "r", Class: policy.Read}, {Name: "w", Class: policy.Write}},
		WriteAllowlist: []string{"w"},
	})
	bob := &Identity{Principal: &policy.Principal{Subject: "bob"}}
	g, err := New(pol, AuthenticatorFunc(func(context.Context, mcp.Request) (*Identity, error) { return bob, nil }), &opts)
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// An audit.Keeper is handed a call's outcome record with the call's own
// arguments, and hashes them into the record itself (off the call's
// path), unless the record already has its hash: a write's, made for its
// intent record before it ran, or a keyed one (Options.ArgsKey), which
// the sink could not make. Such a record is handed over with its hash as
// the intent's, and no arguments.
func TestReview42bKeeperGetsArguments(t *testing.T) {
	args := `{"q":"x"}`
	key := []byte("a key of thirty-two bytes, okay!")
	cases := []struct {
		name string
		tool string
		key  []byte
		want []review42bKept
	}{
		{"read", "r", nil, []review42bKept{
			{Phase: audit.PhaseOutcome, Args: args, ByKeep: true},
		}},
		{"write", "w", nil, []review42bKept{
			{Phase: audit.PhaseIntent, ArgsSHA256: audit.ArgsSHA256(json.RawMessage(args))},
			{Phase: audit.PhaseOutcome, ArgsSHA256: audit.ArgsSHA256(json.RawMessage(args)), ByKeep: true},
		}},
		{"read_keyed", "r", key, []review42bKept{
			{Phase: audit.PhaseOutcome, ArgsSHA256: audit.ArgsHMAC(key, json.RawMessage(args)), ByKeep: true},
		}},
		{"write_keyed", "w", key, []review42bKept{
			{Phase: audit.PhaseIntent, ArgsSHA256: audit.ArgsHMAC(key, json.RawMessage(args))},
			{Phase: audit.PhaseOutcome, ArgsSHA256: audit.ArgsHMAC(key, json.RawMessage(args)), ByKeep: true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := &review42bKeeper{}
			h := review42bWrapped(t, Options{Audit: k, ArgsKey: tc.key}, tc.tool)
			res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tc.tool, Arguments: json.RawMessage(args)}})
			if err != nil || res == nil || res.IsError {
				t.Fatalf("call of %s = %+v, %v; want it run", tc.tool, res, err)
			}
			if diff := cmp.Diff(tc.want, k.records()); diff != "" {
				t.Errorf("records of a call of %s (-want +got):\n%s", tc.tool, diff)
			}
		})
	}
}

// Under AuditFailClosed a read whose outcome record was written runs,
// whether the sink took it by Write or by Keep. (New refuses
// AuditFailClosed without a sink: see TestReview42bFailClosedNeedsSink.)
func TestReview42bFailClosedRecordWritten(t *testing.T) {
	cases := []struct {
		name  string
		sink  func(*review42bKeeper) audit.Sink
		kept  bool // the outcome went to the Keeper by Keep
		wrote bool
	}{
		{"plain_sink", func(k *review42bKeeper) audit.Sink { return struct{ audit.Sink }{k} }, false, true},
		{"keeper", func(k *review42bKeeper) audit.Sink { return k }, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := &review42bKeeper{}
			h := review42bWrapped(t, Options{Audit: tc.sink(k), AuditFailClosed: true}, "r")
			res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "r", Arguments: json.RawMessage(`{}`)}})
			if err != nil || res == nil || res.IsError {
				t.Fatalf("call of r = %+v, %v; want it run", res, err)
			}
			var want, got []review42bKept
			if tc.wrote {
				want = []review42bKept{{Phase: audit.PhaseOutcome, ByKeep: tc.kept}}
			}
			for _, r := range k.records() {
				got = append(got, review42bKept{Phase: r.Phase, ByKeep: r.ByKeep})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}

// New refuses AuditFailClosed without an Audit sink, which would run every
// read unrecorded while the setting promises none runs so; the
// stand-alone steps, which take their sink apart from the Options and do
// not read AuditFailClosed, accept such Options.
func TestReview42bFailClosedNeedsSink(t *testing.T) {
	pol := review41bPolicy(t, policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	bob := AuthenticatorFunc(func(context.Context, mcp.Request) (*Identity, error) {
		return &Identity{Principal: &policy.Principal{Subject: "bob"}}, nil
	})
	opts := &Options{AuditFailClosed: true}
	if _, err := New(pol, bob, opts); err == nil || !strings.Contains(err.Error(), "AuditFailClosed without an Audit sink") {
		t.Errorf("New(AuditFailClosed, no sink): err = %v; want the contradiction refused", err)
	}
	if _, err := New(pol, bob, &Options{AuditFailClosed: true, Audit: &review42bKeeper{}}); err != nil {
		t.Errorf("New(AuditFailClosed, a sink) = %v; want a guard", err)
	}
	if _, err := WriteAhead(&review42bKeeper{}, pol, opts); err != nil {
		t.Errorf("WriteAhead(a sink, Options{AuditFailClosed}) = %v; want the step", err)
	}
}
