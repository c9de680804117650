package mcpguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/internal/corrid"
	"github.com/mcpguard/mcpguard/internal/limitcheck"
	"github.com/mcpguard/mcpguard/internal/logsafe"
	"github.com/mcpguard/mcpguard/internal/typednil"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolOptions are per-tool settings beyond the policy rule.
type ToolOptions struct {
	// Cost computes the spend cost of a call from its validated arguments
	// (numbers are json.Number: policy.MapArgs(args).Number("amount")
	// reads one as a float64). Nil means the rule's fixed Cost. A
	// negative, NaN or infinite result refuses the call as INTERNAL (the
	// configuration is wrong, not the caller).
	Cost func(args map[string]any) (float64, error)
	// DryRunAware declares that the handler honours dryrun.FromContext and
	// touches nothing in dry-run; its answer to a dry run is checked
	// against the tool's output schema like any other. False means the
	// guard never calls the handler in dry-run and answers with a
	// simulated result ([dryrun.Result]). When the tool has an output
	// schema that the simulated result does not fit (a typed tool's
	// usually), the simulated result is a tool error (isError), which
	// clients do not check against the schema, so that no client is handed
	// a result that breaks the tool's contract; a DryRunAware handler can
	// answer in the tool's own shape instead.
	DryRunAware bool
	// DryRun forces dry-run for every call of this tool, a write: [New]
	// (and [Guard.SetPolicy], for its policy) refuses it for a tool the
	// policy classes Read, whose calls are never
	// dry runs, and for a name that is a write tool's only under case
	// folding (see [Options].Tools) when that tool's own options do not
	// set it, as the tool's own calls would write for real.
	DryRun bool
	// RecordArgs names top-level argument fields recorded verbatim in the
	// audit trail. Nil means none: only args_sha256 is recorded (the
	// arguments' SHA-256, or their HMAC-SHA256 under [Options].ArgsKey).
	// They are recorded once the call is authorized: a call refused before
	// (unauthenticated, an unknown or hidden tool, forbidden, a write off
	// the allowlist) has only the hash. A name the tool's input schema
	// plainly cannot carry (a closed schema, as for the policy's argument
	// limits) is refused by [Guard.Install] and [Guard.Wrap].
	RecordArgs []string
	// Describe renders the action in words for the dry-run summary and the
	// confirmation prompt. Nil means a generic description listing the
	// arguments. Its text is shown without control characters other than
	// line feed and tab, format characters (bidirectional overrides,
	// zero-width characters) and line or paragraph separators, cut to
	// 2,000 characters: it usually quotes arguments a model wrote, and a
	// prompt must read as what it is. For the same reason the args it is
	// given are a copy whose strings, and the keys of whose objects, have
	// their line breaks and tabs written as the escapes \n, \r and \t;
	// for the confirmation prompt of a tool of a server the guard is
	// installed on, with the input schema's defaults filled in, as the
	// go-sdk's typed-tool wrapper fills them in before the handler runs
	// (see the package doc). A text with nothing left to show (empty, or
	// blank once cleaned) gives way to the generic description: a human is
	// never asked to confirm an action the prompt does not show. The text
	// is not escaped for a host that renders the question as Markdown (as
	// many MCP hosts do, raw HTML included): quote what a model wrote with
	// confirm.Quote, so that no "<!--" or "&quot;" of it hides or fakes a
	// word of the question.
	Describe func(tool string, args map[string]any) string
	// Timeout is the per-call deadline. 0 means [Options.Timeout]; a
	// negative value means none for this tool, whatever Options.Timeout
	// says. It bounds the guarded calls the handler makes in-process with
	// its context too, writes included (see [Guard.Wrap]).
	Timeout time.Duration
}

// Options configure a [Guard]. The zero value (or nil) is a strict guard:
// tool errors, strict validation, no limits, no dry-run, audit discarded,
// and so, with no sink for a write-ahead intent, every call of a write tool
// refused as AUDIT_UNAVAILABLE (see Audit and NoWriteAhead). [New] and the
// stand-alone steps copy the Options they are given, the Tools map and
// Validation too: changing them later changes nothing for a guard made.
type Options struct {
	// Audit receives one outcome event per call (and an intent event before
	// a write runs). Nil discards events; a write then cannot get a durable
	// intent and is refused with AUDIT_UNAVAILABLE, not retryable (no retry
	// can succeed), unless NoWriteAhead is set ([New] warns of it on
	// Logger when the policy allows writes, and [Guard.SetPolicy] when
	// its policy allows other writes than the one before). A nil pointer
	// (a *audit.JSONLSink whose OpenJSONL failed) or a nil audit.SinkFunc
	// is not a nil sink: New refuses it, as its every record would fail.
	// A sink that is an [audit.Keeper] (the package's JSONL, SQL and fanout sinks)
	// is handed each outcome event with Keep, and hashes its arguments (and,
	// for JSONL, encodes it) off the call's path.
	Audit audit.Sink
	// ArgsKey, when set, makes the audit records' args_sha256 an
	// HMAC-SHA256 of the arguments' canonical JSON under this key
	// ([audit.ArgsHMAC]) instead of their plain SHA-256, which anyone who
	// reads the trail can reverse for arguments with few possible values
	// (an account id, a quantity) by hashing guesses. Records made under
	// one key stay comparable with each other. At least 16 bytes; nil
	// means the plain hash. With a key, the hash is made on the call's
	// path, also for an [audit.Keeper] sink.
	ArgsKey []byte
	// RequestIDHeader names the HTTP header in which a proxy in front of
	// the server sends its own id of the request: "X-Mcp-Gateway-Request-Id"
	// behind mcpguard's gateway, whose audit records carry that id as
	// their correlation_id. The guard's records then carry it as their
	// request_id ([audit.Event].RequestID), and the two trails join on it.
	// The value is what the request says, and proves nothing: anyone who
	// reaches the server directly can set it. One value of 1 to 128
	// characters from A-Z a-z 0-9 . _ : - is recorded; any other (none,
	// two, longer, other characters) is recorded as "". Empty means no
	// header is read. Only transports with HTTP requests have headers.
	RequestIDHeader string
	// NoWriteAhead skips the write-ahead intent event of write tools. False
	// (the default) requires a durable intent before any write runs.
	NoWriteAhead bool
	// WriteAheadTimeout bounds the wait for a write's intent event. The
	// event is written whether or not the caller is still there and
	// without the call's Timeout (which bounds the handler), so a sink
	// that stops answering (a PostgreSQL server whose host froze, a disk
	// that hangs) would otherwise hold the write, its caller without an
	// answer, until the sink answered again, and the write would then run,
	// however late. When the sink has not made the event within the bound,
	// the write is refused with AUDIT_UNAVAILABLE (retryable) and not
	// attempted; the event may still be made later, so the trail can show
	// an intent without its write, never a write without its intent. The
	// sink must give up when its context ends, as the package audit's
	// sinks do. 0 means 10 seconds; a negative value means no bound. The
	// outcome records (of every call, this refusal's too) are handed to
	// the sink without a bound, as nothing is to be lost: a sink that
	// takes no record at all (a full queue before a database that stopped
	// answering) holds the calls' answers until it takes them.
	WriteAheadTimeout time.Duration
	// AuditFailClosed refuses a read (or a dry run) whose outcome event
	// cannot be written (AUDIT_UNAVAILABLE, retryable); a second outcome
	// event, of that refusal, is then written as well as the sink can
	// (detail "the outcome record could not be written: the answer was
	// withheld"), so that a sink that failed in part (an [audit.Fanout]
	// whose other sinks recorded the call as allowed) shows it as the
	// call's last outcome. A write that ran keeps its result: its durable
	// intent event stands for it, and a retryable refusal would invite the
	// caller to write again. False (the default) lets the read proceed and
	// reports the failure to Logger. [New] refuses it without an Audit
	// sink: no outcome event could be written, so every read would run
	// unrecorded; and with NoWriteAhead: a write whose outcome event could
	// not be written would have run with no record at all.
	AuditFailClosed bool
	// Limiter applies rate, spend and in-flight caps. Nil means none.
	// [New] (and [Guard.SetPolicy], for its policy) refuses a limiter
	// with a limit for one tool the policy has no
	// rule for (a typo), or a spend limit for one tool that costs nothing
	// (no Cost in its rule or the default rule, no Tools Cost function),
	// which would cap nothing; a limit for a name that equals a tool
	// rule's under case folding is that tool's, and with a default rule
	// every name has a rule. It also refuses a spend limit (for one tool
	// or every tool) whose Max is below the Cost of a rule it caps, a tool
	// rule's or the default rule's, when no Tools Cost function may price
	// the calls charged under it (for a tool rule, one for the tool's own
	// name: a call by another spelling costs at least the rule's Cost; for
	// the default rule, one for each write allowlist entry it governs, or,
	// when it admits any name, a read's or under a lone "*", one for a name
	// of a limit's Tool, and none under a limit for every tool, as a name
	// without one costs its Cost):
	// the limiter never admits a call of more than Max, so every such call
	// would be refused for ever (a write tool not on the write allowlist,
	// never called, excepted). A Cost equal to Max admits one call. A call
	// the limiter admitted and that is refused before its handler runs (a
	// write without a durable intent, a confirmation found used, a
	// confirmation state that could not be made, a write whose deadline
	// passed before its handler was called, arguments the go-sdk's
	// typed-tool wrapper could not read, decode or validate, as the
	// package doc's # Errors says) is given back its calls
	// and cost ([limiter.Limiter.Refund]): a call refused at once consumes
	// nothing; one refused later keeps the part that may have refilled
	// meanwhile, which its audit record's cost shows. When the limiter's
	// store fails and the limiter fails closed, the call is refused as
	// RATE_LIMIT_EXCEEDED with a wait of one second (see [Limit]); so is a
	// call whose context ended before the limiter decided (the client went
	// away), which is logged at Info, not as a limiter failure, and
	// recorded with a detail that says so; but a call made in-process
	// within another guarded call's handler whose deadline passed first
	// timed out instead (see [Guard.Wrap]).
	//
	// A dry run of a write counts one call against the rate and holds an
	// in-flight slot, as the real call would, and spends nothing: its cost
	// is only checked against the spend caps ([limiter.Request].DryRun).
	// When the cost would not fit now, the dry run is refused with the
	// SPEND_LIMIT_EXCEEDED, and the wait, that the real call would get
	// (and counts no call); its audit record has dry_run true, that code
	// and cost 0. A dry run that fits is answered as any dry run is (a
	// simulated result, or its DryRunAware handler's), and the next round
	// of its multi round-trip call is not checked again. The check takes
	// nothing, even for a moment, so a dry run's cost never makes a real
	// call fail (its call and slot count as the real call's would), and
	// its answer holds only for the moment it was made: other calls may
	// use the room before the real call comes. A dry run whose limiter
	// cannot decide (its store is down) is treated as a write: refused
	// unless the limiter fails open for writes. On a store that is not a
	// [limiter.PeekStore], a dry run's cost is not checked.
	Limiter *limiter.Limiter
	// Confirmer signs and verifies confirmation states for tools whose rule
	// has Confirm. Nil is an error in [New] when the policy has such a tool.
	// A client on protocol 2026-07-28 or later whose request declares the
	// elicitation capability (for form mode) in its _meta is asked with an
	// input request and calls again with the answer (one that declares none
	// is refused CONFIRMATION_REQUIRED: it could not answer, and its SDK
	// would fail the call with an error of its own); an older one that supports
	// elicitation is asked with an elicitation inside the call, whose
	// answer is waited for until the state expires (then the call is
	// refused, CONFIRMATION_REQUIRED, as is a call no one can be asked
	// for), or until the deadline of the context the call came with (a
	// call made in-process within another guarded call's handler has
	// that call's; see [Guard.Wrap]), which refuses it as timed out
	// before its tool ran: UPSTREAM_UNAVAILABLE, retryable. That answer
	// comes back on the session, from whoever may post on it: over
	// stateful Streamable HTTP the older client is asked only on a session
	// that the guard saw opened (its initialize, through
	// [Guard.Install]) by the call's verified user (TokenInfo UserID) or,
	// through the gateway, for the call's subject; any other call is
	// refused so, as is one to a handler [Guard.Wrap] guards on a server
	// no guard is installed on, one over the go-sdk's HTTP+SSE
	// transport, which binds no session (see "Sessions over HTTP" in the
	// package documentation), and one over stateless Streamable HTTP,
	// which keeps no session to ask on (its refusal says so). An accepted
	// confirmation is used up only when the call is admitted, after the
	// limits and the write-ahead record: a call those
	// refuse can be sent again with the same state and answer until the
	// state expires (an older client, which never sees the state, is
	// asked again). A decline uses the state up. With a Limiter, the
	// round that asks counts once against the call rate and checks the
	// call's cost against the spend caps without spending it (as a dry run
	// does; see Limiter): a call whose cost would not fit now is refused,
	// SPEND_LIMIT_EXCEEDED, before the human is asked. The confirmed round
	// then counts its cost only.
	// The handler of a confirmed call runs its first round: its request
	// carries neither the confirmation's state nor any input responses.
	// It also seals the request state of a handler that asks the user for
	// input (the multi round-trip), so that the call's next round counts
	// nothing more against the limits and is not asked to confirm again;
	// with a nil Confirmer those states are sealed with a key of this
	// Guard's, and a next round that reaches another replica, or another
	// Guard (see [Guard.Install]), is refused as INVALID_ARGUMENTS (call
	// again). A sealed state expires as a confirmation state does (the
	// signer's TTL, confirm.DefaultTTL by default, two minutes): a next
	// round later than that, a human slow to fill in a form, is refused
	// INVALID_ARGUMENTS too. A confirmation or sealed state whose signer's nonce store
	// fails (confirm.ErrStore: a Redis down) is refused
	// UPSTREAM_UNAVAILABLE, retryable after a second, its tool not run and
	// its state not used up: the same call with the same state and answer
	// can succeed once the store is back.
	Confirmer *confirm.Signer
	// DryRun turns dry-run on for every write tool. A client can also ask
	// for a preview per call with the dryrun.MetaKey _meta key; it can never
	// turn dry-run off. A call of a write tool made with a dry-run context
	// (dryrun.FromContext: a DryRunAware handler that calls another guarded
	// tool with its context) is a dry run too. A dry run is checked against
	// the spend caps without spending (see Limiter). A dry run of a tool
	// that asks for a confirmation is never asked; its DryRunAware handler
	// gets the request the handler of the real, confirmed round would: no
	// confirmation state or answer, should the client send them. A dry run
	// may carry the sealed state of a real call's next round (a preview of
	// that round): the state is checked, not used up, so the real round can
	// follow with it.
	DryRun bool
	// Tools holds per-tool settings keyed by tool name. A call of a name
	// that equals a tool's only under case folding, and so has its rule
	// (see [policy.Policy.Resolve]), also gets that tool's DryRun, and
	// costs the larger of the two costs, the name's and the tool's (each
	// that of its Cost function, or else of its rule; the name's rule is
	// the combined one); its other settings are the name's own. Settings
	// for such a name apply to calls by it only, not to the tool's.
	Tools map[string]ToolOptions
	// ProtocolErrors reports denials as JSON-RPC errors instead of tool
	// error results. TOOL_NOT_FOUND is always a JSON-RPC error, identical to
	// the go-sdk's own for an unknown tool. A dry run's preview that does
	// not fit the tool's output schema, a tool error but no denial, is then
	// in its text content alone, as with SchemaSafeErrors.
	ProtocolErrors bool
	// SchemaSafeErrors leaves StructuredContent out of the tool-error
	// results the guard gives for a tool with an output schema (every tool
	// mcp.AddTool adds with a struct output): the refusal of a call that
	// passed resolution (the caller may know the tool), and a dry run's
	// preview that does not fit the schema. The error, or the preview, is
	// in the text content alone, where [DenialOf] reads it. The MCP
	// specification has structured results conform to the output schema,
	// and the TypeScript SDK's client (1.32) checks every one of a tool it
	// has listed, isError or not: it throws -32602 "Structured content does not match the tool's
	// output schema" in place of the guard's refusal, so that its caller,
	// and the model, never read the code, the message or the correlation
	// id. Set it for such clients (or use ProtocolErrors). A refusal before
	// resolution keeps its StructuredContent, as every tool's does, so that
	// nothing tells which names have an output schema. The stand-alone
	// Confirm, Limit, DryRun and WriteAhead, which do not know a tool's
	// output schema, leave it out of their every refusal past resolution,
	// whatever the tool; around the steps that take no Options, put
	// [SchemaSafe]. False keeps the error contract: StructuredContent and
	// text both hold the error.
	SchemaSafeErrors bool
	// NotFoundCode is the JSON-RPC code of TOOL_NOT_FOUND. 0 means -32602,
	// as the go-sdk answers for an unknown tool. Note that go-sdk v1.8.0
	// rewrites the message of every -32601 error a handler returns to
	// `method not found: "tools/call"`: with -32601 the code reaches the
	// client but the message does not (hidden and unknown tools still look
	// alike).
	NotFoundCode int64
	// MaxOutputBytes caps the size of a tool's result (a tool error's
	// too): its structured content, as JSON, and the rest of it together
	// may each have at most this many bytes. The rest is its content
	// blocks (texts; image and audio data and an embedded resource's blob,
	// counted before base64; MIME types and URIs; a resource link, its
	// icons too, as JSON; each block's _meta and annotations as JSON), its
	// own _meta, the input a multi round-trip result asks for (as JSON)
	// and its request state. The two are capped apart because the go-sdk's
	// typed tools send their structured content twice, the second time as
	// a text block. A result over it is refused as INVALID_RESPONSE, like a
	// malformed one (for a write, which may have been made, not
	// retryable), before its structured content is checked against the
	// output schema, a cost that grows with its size; the audit record's
	// detail gives the size. 0 means 4 MiB; a negative value means no cap.
	// Whatever the cap, a result the go-sdk could not encode (a +Inf or a
	// func in it, a json.RawMessage that is not JSON), to which it would
	// send no answer at all, is refused as a malformed one, and so is a
	// content block that is nil (sent as null, which a client cannot read)
	// or a nil pointer, or a part whose MarshalJSON panics (the go-sdk
	// panics encoding it, ending the process); so is one it would send as
	// bytes that are not UTF-8 (a json.RawMessage's, sent as they are),
	// which a strict client cannot read, and one with a part (its
	// structured content, a _meta) nested more than 512 levels deep: the
	// go-sdk's client refuses a message nested beyond 1000 levels and
	// closes its session.
	MaxOutputBytes int
	// Validation tunes argument validation. Nil means strict.
	Validation *ValidationOptions
	// Timeout is the default per-call deadline. 0 (or a negative value)
	// means none. It bounds the handler, and starts when the handler is
	// called: the question that asks an older client's human to confirm
	// the call (see Confirmer) comes before it.
	Timeout time.Duration
	// RetryReads retries a read tool once when its handler fails with an
	// error that unwraps to [ErrUpstreamUnavailable] or reports
	// Temporary() == true, unless the call's deadline has passed or its
	// client has gone away. Writes are never retried.
	RetryReads bool
	// SessionKey derives the limiter key of the session of an
	// authenticated call. Nil means the session id; where there is none,
	// or the session is one the go-sdk made up for one request of a
	// stateless server (whose id, under the go-sdk's
	// MCPGODEBUG=allowsessionsinstateless=1, is whatever Mcp-Session-Id
	// the request sent, another caller's too), the subject; else the
	// session object: each behind a prefix of its own ("sid:", "user:",
	// "session:"), so that a session id a client chose is never
	// another caller's key. Where the MCP session has no
	// id (stdio, in memory, a direct call), the key a SessionKey set here
	// gives is also the audit records' session_id; with a nil SessionKey,
	// their session_id is then empty, and so it is for a call refused
	// before it was authenticated, which SessionKey is not asked about.
	// It may be asked more than once for a call (the limiter's key, the
	// records' session_id), and must give the same key each time; an
	// empty key is a key like any other: every session given it shares
	// one per-session bucket.
	SessionKey func(req *mcp.CallToolRequest, id *Identity) string
	// Now returns the current time. Nil means time.Now. A Now that panics
	// (its bug) is logged, and time.Now is read instead.
	Now func() time.Time
	// Logger receives operational messages (panics, audit failures). Nil
	// means a text logger on stderr; never stdout. A tool name in them,
	// which the client may have chosen, is shown as audit records show it:
	// as it is when [policy.CheckName] accepts it and it has at most 1024
	// bytes, else quoted and escaped as strconv.QuoteToASCII does and
	// cut at 128 bytes. The text of a handler's error or panic value,
	// which often quotes the arguments, is shown as it is when it has at
	// most 2048 bytes and no control, format (a bidi override) or
	// separator character, else quoted and escaped so and cut at 2048
	// bytes. A handler that panics (its bug) loses that record, which is
	// said on standard error; the call goes on as if it had been logged.
	Logger *slog.Logger
}

// A Guard is the assembled pipeline. It is safe for concurrent use. Use
// one way in per server: [Guard.Install] for the whole server, or
// [Guard.Wrap] / [Guard.AddTool] per handler; both at once would run the
// pipeline twice per call (and count it twice against the limits).
// [Guard.Install] installs a guard on one server, once: a guard keeps that
// server's tools, so a second Install, on any server, is an error, and so
// are [Guard.AddTool] on the server it is installed on and Install on a
// server it added a tool to (a handler given to [Guard.Wrap] it cannot
// tell). Guards that share a limiter.Store and an audit sink share limits
// and an audit trail. The zero Guard is not usable: make one with [New]
// (Install, AddTool, Wrap and SetPolicy refuse a Guard New did not make).
type Guard struct {
	// pol is the policy, replaced whole by SetPolicy: a call, or a
	// listing, loads it once and is decided by what it loaded.
	pol   atomic.Pointer[policy.Policy]
	authn Authenticator
	opts  Options
	// unboundWarned is set once the guard has warned of a session bound
	// to no one used by a caller it authenticates (sessopen.go).
	unboundWarned atomic.Bool
	now           func() time.Time
	log           *slog.Logger
	reg           registry
	views         sessionViews[toolsView] // what each session was told of the tools (notify.go)
	lc            toolsNotifier           // tells sessions of a new policy (setpolicy.go)
	res           resources               // what each session was told of the resources (resnotify.go)
	mrtr          *confirm.Signer         // seals handlers' RequestState (see mrtr.go)
	// keeper is opts.Audit when it can take outcome records over
	// (audit.Keeper), which it then encodes in batches.
	keeper audit.Keeper

	ids    corrid.Source // correlation ids of the pipeline's calls
	maxOut int           // opts.MaxOutputBytes, its default applied; negative: no cap

	active atomic.Int64 // calls under way (see Wait)
	// stalled counts, by session, the notifications still being written
	// past notifyWait (see notifyBounded).
	stalledMu sync.Mutex
	stalled   map[mcp.Session]int

	instMu sync.Mutex
	server *mcp.Server // the server Install installed the guard on; nil: none
	// added holds, weakly, the servers AddTool added a tool to, on which
	// Install is refused.
	added map[weak.Pointer[mcp.Server]]struct{}

	// polMu orders SetPolicy with the checks of tools against the policy
	// by Wrap and Install, so that no tool is checked against a policy
	// that is being replaced. wrapped holds, weakly, the entries of the
	// tools Wrap guards, which SetPolicy checks against a new policy.
	polMu   sync.Mutex
	wrapped map[weak.Pointer[toolEntry]]struct{}
}

// Wait returns once no call is under way in the guard: every call it has
// started has returned, its outcome record handed to the audit sink. It
// returns ctx's error if ctx ends first. Calls that start meanwhile are
// waited for too, so call it once the server takes no more calls, and
// before closing the audit sink, which would refuse their records. Over
// Streamable HTTP a call goes on in its MCP session after the HTTP request
// that carried it ends (its client gone, say), so http.Server.Shutdown
// does not wait for it: call Wait after Shutdown. A handler's notification
// to its client (progress, a log message) is written by the go-sdk on the
// handler's goroutine, and a write to a client that stopped reading (its
// receive window full) does not end, nor does a context end it: on a
// server the guard is installed on, the handler waits for it at most ten
// seconds (or until its context ends), then gets an error while the write
// goes on by itself, and the later notifications to the same stream fail
// at once until it ends (over stateful Streamable HTTP the call's own
// response stream, so a stalled GET stream or another call's spares the
// others; elsewhere the session's one stream); a call's notification
// whose context has ended is not written. So such a client holds its call, its
// in-flight slot and Wait no longer. A request to the client (an
// elicitation, the guard's own too) stops being waited for when its
// context ends, even while its write, or that of the
// notifications/cancelled go-sdk v1.8.0 then sends (on the sender's
// goroutine under MCPGODEBUG=blockingcancelnotify=1), goes on, on a server
// the guard is installed on or added a tool to ([Guard.AddTool]); and so
// does the guard's own question to confirm a call that [Guard.Wrap] alone
// guards.
func (g *Guard) Wait(ctx context.Context) error {
	if g == nil {
		return nil // nothing in flight
	}
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for g.active.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// newGuard is [New] without the check that tools needing confirmation have
// a Confirmer: the stand-alone steps use it too.
func newGuard(p *policy.Policy, authn Authenticator, opts *Options) (*Guard, error) {
	if p == nil {
		return nil, errors.New("mcpguard: nil policy")
	}
	if authn == nil {
		return nil, errors.New("mcpguard: nil authenticator")
	}
	g := &Guard{authn: authn}
	g.pol.Store(p)
	if opts != nil {
		g.opts = *opts
	}
	if err := nilSink(g.opts.Audit); err != nil {
		return nil, err
	}
	if n := len(g.opts.ArgsKey); n > 0 && n < 16 {
		return nil, fmt.Errorf("mcpguard: ArgsKey of %d bytes, want at least 16", n)
	}
	if err := checkHeaderName(g.opts.RequestIDHeader); err != nil {
		return nil, err
	}
	// The settings are the guard's own: a caller that changes its Options
	// later (while calls read them) changes nothing here.
	g.opts.ArgsKey = slices.Clone(g.opts.ArgsKey)
	g.opts.Tools = cloneTools(g.opts.Tools)
	if v := g.opts.Validation; v != nil {
		vo := *v
		g.opts.Validation = &vo
	}
	g.keeper, _ = g.opts.Audit.(audit.Keeper)
	switch g.maxOut = g.opts.MaxOutputBytes; {
	case g.maxOut == 0:
		g.maxOut = defaultMaxOutput
	case g.maxOut < 0:
		g.maxOut = -1
	}
	switch {
	case g.opts.WriteAheadTimeout == 0:
		g.opts.WriteAheadTimeout = defaultWriteAheadTimeout
	case g.opts.WriteAheadTimeout < 0:
		g.opts.WriteAheadTimeout = -1
	}
	g.log = g.opts.Logger
	if g.log == nil {
		g.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	} else {
		g.log = logsafe.Logger(g.log)
	}
	g.now = time.Now
	if g.opts.Now != nil {
		g.now = safeNow(g.opts.Now, g.log)
	}
	if err := checkToolOptions(p, g.opts.Tools); err != nil {
		return nil, err
	}
	if err := checkLimitTools(p, g.opts.Limiter, g.opts.Tools); err != nil {
		return nil, err
	}
	if c := g.opts.Confirmer; c != nil && c.TTL() <= 0 {
		// Its every state would fail at run time, for every caller.
		return nil, errors.New("mcpguard: Options.Confirmer not made by confirm.NewSigner (the zero Signer has no key)")
	}
	g.mrtr = g.opts.Confirmer
	if g.mrtr == nil {
		var err error
		if g.mrtr, err = newMRTRSigner(); err != nil {
			return nil, fmt.Errorf("mcpguard: request state key: %w", err)
		}
	}
	g.reg.init()
	g.ids.Init()
	return g, nil
}

// checkToolOptions refuses options in tools that the policy p cannot
// apply: for a name without a rule, or DryRun for a tool p classes Read
// or for a name that is a write tool's only under case folding while that
// tool's own options do not set it.
func checkToolOptions(p *policy.Policy, tools map[string]ToolOptions) error {
	for name, o := range tools {
		r, ok := p.Resolve(name)
		if !ok {
			return fmt.Errorf("mcpguard: options for tool %q, which has no policy rule", name)
		}
		if o.DryRun && r.Class != policy.Write {
			return fmt.Errorf("mcpguard: options for tool %q: DryRun, but the policy classes the tool a read, which never dry-runs; make its rule a Write if it writes", name)
		}
		// A name that is a write tool's only under folding: its DryRun is
		// for calls by that name, and the tool's own calls write for real.
		if n := r.Name; o.DryRun && n != "" && n != name && !tools[n].DryRun {
			if own, _ := p.Resolve(n); own.Class == policy.Write {
				return fmt.Errorf("mcpguard: options for tool %q: DryRun, but %q is the write tool %q only under case folding, whose own calls would write for real (options are for a name exactly); set DryRun in the options for %q", name, name, n, n)
			}
		}
	}
	return nil
}

// checkConfirmer refuses a policy p with a tool that needs confirmation,
// or a default rule that does, when there is no Confirmer s.
func checkConfirmer(p *policy.Policy, s *confirm.Signer) error {
	if s != nil {
		return nil
	}
	for _, name := range p.Tools() {
		if r, _ := p.Resolve(name); r.Confirm {
			return fmt.Errorf("mcpguard: tool %q needs confirmation but Options.Confirmer is nil", name)
		}
	}
	// The default rule, which any other name resolves to: a name no rule
	// of its own can take (the policy's names are tool names).
	if r, ok := p.Resolve("\x00"); ok && r.Confirm {
		return errors.New("mcpguard: the policy's default rule needs confirmation but Options.Confirmer is nil")
	}
	return nil
}

// checkLimitTools refuses a limit of l that cannot do what it was meant to
// (see limitcheck.Find): a limit for one tool that no call the policy p
// admits is of, or, for a spend limit, no call of which can cost anything
// (no cost in a rule it may be charged under, and no name equal to it
// under folding has a Cost function in tools); or a spend limit whose Max
// is below the Cost of a rule it caps, when no Cost function in tools may
// price those calls lower: for a tool rule, none for its own name (a call
// by another spelling costs the larger of its cost and the tool's, see
// Guard.toolOptions); for the default rule, when it admits any name (a
// read's, or a write's under a lone "*" allowlist), none for a name of
// the limit's Tool, and under a limit for every tool always (a name
// without one costs its Cost); else (a write's) none for some entry of the
// write allowlist it governs (of the limit's Tool, under folding, for a
// limit for one tool): one for a name off the allowlist prices no call.
func checkLimitTools(p *policy.Policy, l *limiter.Limiter, tools map[string]ToolOptions) error {
	if l == nil {
		return nil
	}
	var named []string // the names with a Cost function
	for n, o := range tools {
		if o.Cost != nil {
			named = append(named, n)
		}
	}
	priced := limitcheck.Priced(named)
	switch pr := limitcheck.Find(p, l.Limits(), priced); {
	case pr == nil:
		return nil
	case pr.NoRule:
		return fmt.Errorf("mcpguard: limiter limit %v: the policy has no rule for tool %q, so the limit caps nothing", pr.Limit, pr.Limit.Tool)
	case pr.Cost > 0 && pr.Rule == "":
		return fmt.Errorf("mcpguard: limiter limit %v: a call under the policy's default rule costs %v (its Cost, for a name without a Cost function in Options.Tools), more than the limit's Max, so every such call would be refused for ever; raise Max to at least %v, or lower the Cost", pr.Limit, pr.Cost, pr.Cost)
	case pr.Cost > 0:
		return fmt.Errorf("mcpguard: limiter limit %v: a call under tool %q costs %v (its rule's Cost, and no Cost function in Options.Tools for %q: one for another spelling prices no call lower), more than the limit's Max, so every such call would be refused for ever; raise Max to at least %v, lower the Cost, or give %q a Cost function", pr.Limit, pr.Rule, pr.Cost, pr.Rule, pr.Cost, pr.Rule)
	default:
		return fmt.Errorf("mcpguard: limiter limit %v: tool %q costs nothing (no Cost in its rule, no Cost function in its Options.Tools), so the limit caps nothing", pr.Limit, pr.Limit.Tool)
	}
}

// New returns a guard enforcing p, with callers resolved by authn. It
// returns an error for a nil policy or authenticator, for per-tool options
// of tools the policy does not know, for per-tool DryRun of a tool the
// policy classes Read (reads are never dry runs) or of a name that is a
// write tool's only under case folding while the tool's own options do
// not set DryRun (its calls would write for real), for a limit of
// Options.Limiter for one tool that the policy has no rule for (unless its
// name equals a tool rule's under case folding; with a default rule every
// name has one), or, for a spend limit, that costs nothing (no cost in its
// rule or the default rule, no Cost function), for a spend limit of
// Options.Limiter (for one tool or every tool) whose Max is below the
// fixed Cost of a rule it caps (no Cost function that may price its calls
// lower: see [Options].Limiter), which would refuse every call charged
// under that rule for ever, for an Options.ArgsKey shorter than 16 bytes,
// for an Options.RequestIDHeader that is not a header name, for
// Options.AuditFailClosed without an Options.Audit sink or with
// Options.NoWriteAhead, for tools that
// need confirmation while Options.Confirmer is nil, for a Confirmer not
// made by confirm.NewSigner, or for an Audit sink that is a nil pointer or
// func.
func New(p *policy.Policy, authn Authenticator, opts *Options) (*Guard, error) {
	g, err := newGuard(p, authn, opts)
	if err != nil {
		return nil, err
	}
	// Not in newGuard: the stand-alone steps take their sink apart from
	// the Options, and none reads AuditFailClosed.
	if g.opts.AuditFailClosed && g.opts.Audit == nil {
		return nil, errors.New("mcpguard: AuditFailClosed without an Audit sink: no outcome record could be written, so every read would run unrecorded; set Options.Audit, or leave AuditFailClosed off")
	}
	if g.opts.AuditFailClosed && g.opts.NoWriteAhead {
		return nil, errors.New("mcpguard: AuditFailClosed with NoWriteAhead: a write whose outcome record could not be written would have run with no record of it at all (no intent stands for it); leave one of them off")
	}
	if err := checkConfirmer(p, g.opts.Confirmer); err != nil {
		return nil, err
	}
	warnNoTrail(g.log, p, &g.opts)
	return g, nil
}

// nilSink refuses a sink that is a nil pointer in a non-nil interface (a
// *audit.JSONLSink whose OpenJSONL failed, given on): not "no sink", which
// the guard would say, but one whose every record fails, each read then
// answered with no record of it.
func nilSink(s audit.Sink) error {
	if !typednil.Is(s) {
		return nil
	}
	return fmt.Errorf("mcpguard: the audit sink is a nil %T (did its OpenJSONL or NewSQL fail?)", s)
}

// warnNoTrail warns when p allows writes that o leaves no way to run: no
// Audit sink for their write-ahead records (and NoWriteAhead unset), so
// that every call of them is refused AUDIT_UNAVAILABLE. Documented, and so
// not an error, but otherwise met only at the first write.
func warnNoTrail(log *slog.Logger, p *policy.Policy, o *Options) {
	if o.Audit != nil || o.NoWriteAhead {
		return
	}
	if w := p.WriteAllowlist(); len(w) > 0 {
		log.Warn("mcpguard: the policy allows writes but Options.Audit is nil: no write-ahead record can be made, so every write is refused AUDIT_UNAVAILABLE; set Options.Audit (or Options.NoWriteAhead)",
			"write_allowlist", strings.Join(w, ","))
	}
}

// Policy returns the policy that decides the guard's calls now: the one
// given to [New], or the last one [Guard.SetPolicy] set.
func (g *Guard) Policy() *policy.Policy {
	if g == nil {
		return nil
	}
	return g.pol.Load()
}

// unmade refuses a Guard that [New] did not make (the zero Guard, or nil),
// whose first call or listing would panic.
func (g *Guard) unmade() error {
	if g == nil || g.log == nil {
		return errors.New("mcpguard: a Guard not made by New (the zero Guard is not usable)")
	}
	return nil
}

// Wrap returns h guarded by the full pipeline for tool t. It checks t
// against the policy now: a tool without a rule, or whose ReadOnlyHint
// contradicts its class, is an error, as is a name its audit records
// could not carry (see [Guard.Install]), a schema that does not compile,
// a tool that could not be listed (see [Guard.Install]), an input schema
// that binds an argument to an HTTP header (x-mcp-header) of a tool the
// policy hides from some caller (see [Guard.Install]), an argument limit
// of the tool's own rule on an argument its input schema says no call can
// carry (its "properties", closed by strict mode or additionalProperties
// false, lack it), a RecordArgs (Options.Tools) naming such an argument,
// or a nil h. A tool with Annotations hints ReadOnlyHint
// false unless it sets it (false is the MCP default), so a read tool whose
// Annotations only give a Title is refused; a tool with no Annotations
// hints nothing.
// Wrap protects one raw handler; to protect every tool of a server,
// including typed ones, and filter tools/list and its tools/list_changed
// notifications, use [Guard.Install]. A wrapped handler on a server no
// guard is installed on never sees a session opened, so over stateful
// Streamable HTTP it does not ask an older client (protocol before
// 2026-07-28) to confirm inside the call, and refuses such a call
// CONFIRMATION_REQUIRED (see the package doc's "Sessions over HTTP").
//
// A handler may call a handler Wrap returned (of this guard or another's)
// in-process, with its own context and a request carrying its call's
// Session and Extra: that is a call of its own. Its caller is
// authenticated from that request, as any call's is (the identity in the
// context is not taken over, so a request without the call's Extra carries
// no token), and authorized by that caller's roles. It has its own
// correlation id and audit records, which name the outer call's
// correlation id as their parent ([audit.Event].ParentID), and is charged
// against the limits as
// a call of its own, in an in-flight place of its own: under an in-flight
// cap of 1 per user, the inner call of a call holding that place is
// refused, CONCURRENCY_LIMIT_EXCEEDED. It is a dry run when the outer call
// is one (see [Options].DryRun), asks for its own confirmation, and ends by
// the outer call's deadline (a write's too, whose handler is otherwise not
// ended with its caller). A handler the deadline ends timed out, as any
// does (UPSTREAM_UNAVAILABLE; a write's not retryable); a call the
// deadline ends while an older client's human is asked to confirm it, or
// while the limiter's store is asked (a read's too, which the limiter did
// not admit), or a write whose deadline passed before its handler was
// called (a slow write-ahead record), timed out before its tool ran: it is
// refused UPSTREAM_UNAVAILABLE, retryable, its tool not run after the
// deadline whatever the human answers, given back what the limits charged
// it (the round that asked the human keeps its count against the call
// rate, as when the confirmation expires), and recorded so. A limiter's
// store that fails before the deadline, or answers outside its contract
// however late, and a write-ahead record that fails (its sink is not
// given the deadline), keep their refusals (RATE_LIMIT_EXCEEDED,
// AUDIT_UNAVAILABLE). Its confirmation
// question, and under [Guard.Install] or [Guard.AddTool] its handler's
// own, ends when the outer call's caller cancels. A panic in it is
// recovered by its guard: the outer handler gets an INTERNAL tool error.
func (g *Guard) Wrap(t *mcp.Tool, h mcp.ToolHandler) (mcp.ToolHandler, error) {
	if err := g.unmade(); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errors.New("mcpguard: nil handler")
	}
	e, err := g.compileWrapped(t)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := g.serve(ctx, req, e, h)
		if res == nil && err == nil { // cannot happen; never hand (nil, nil) to the SDK
			return Deny(CodeInternal, "no result").Result(), nil
		}
		return res, err
	}, nil
}

// AddTool wraps h with [Guard.Wrap] and registers it on s. On a server
// the guard is installed on ([Guard.Install]), which guards every tool of
// it, added later too, it is an error (the pipeline would run twice per
// call): add the tool with s.AddTool. Install on s is an error after it.
// The first AddTool on s adds a sending middleware to s, as Install does,
// through which a request the handler sends the client within a guarded
// call passes: its answer is not delivered when [Guard.SetPolicy] set a
// policy meanwhile that refuses the call, and its wait ends when the
// caller of a write cancels the call. As with Wrap, the guard filters no
// tools/list of s: the tool is listed to every caller, a caller the
// policy hides it from included (whose calls of it are answered as an
// unknown tool's); to hide it from the list, use Install.
func (g *Guard) AddTool(s *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) error {
	if err := g.unmade(); err != nil {
		return err
	}
	if s == nil {
		return errors.New("mcpguard: nil server")
	}
	wh, err := g.Wrap(t, h)
	if err != nil {
		return err
	}
	g.instMu.Lock()
	defer g.instMu.Unlock()
	if g.server == s {
		return errors.New("mcpguard: the guard is installed on this server, which guards every tool of it: add the tool with the server's AddTool")
	}
	k := weak.Make(s)
	if _, ok := g.added[k]; !ok {
		if g.added == nil {
			g.added = map[weak.Pointer[mcp.Server]]struct{}{}
		}
		g.added[k] = struct{}{}
		runtime.AddCleanup(s, g.forgetAdded, k)
		// What a handler asks the client within a call is answered as
		// under Install (see askClient).
		s.AddSendingMiddleware(g.askingClient)
	}
	s.AddTool(t, wh)
	return nil
}

func (g *Guard) forgetAdded(k weak.Pointer[mcp.Server]) {
	g.instMu.Lock()
	defer g.instMu.Unlock()
	delete(g.added, k)
}

// cloneTools returns a copy of tools whose RecordArgs are copies too (nil
// for nil), so that a caller that changes its Options later changes
// nothing for a guard or step made with them.
func cloneTools(tools map[string]ToolOptions) map[string]ToolOptions {
	if tools == nil {
		return nil
	}
	out := maps.Clone(tools)
	for name, o := range out {
		o.RecordArgs = slices.Clone(o.RecordArgs)
		out[name] = o
	}
	return out
}
