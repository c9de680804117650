package audit

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Event is one audit record: one decision about one tool call (or, from the
// gateway, about a refused request that carries no tool call: one whose
// messages could not be read, or refused for its credentials or its
// session; an outcome without a Tool). The JSON field names are the
// snake_case names below; JSONL and SQL share this one schema.
//
// An Event never carries the caller's credential. Raw arguments are recorded
// only in Args, and only the fields a tool opted in to record; otherwise
// ArgsSHA256 identifies the arguments.
type Event struct {
	Time          time.Time `json:"time"`
	CorrelationID string    `json:"correlation_id"`
	// ParentID is the correlation id of the call whose handler made this
	// one: a guarded call made in-process, with its context, by the
	// handler of another guarded call (a composite tool calling another
	// guarded tool; see mcpguard.CorrelationID). It is the direct outer
	// call's only: the chain is followed from record to record. "" for a
	// call of its own (every call a client sends, also where two layers
	// record it: a Wrap'd handler or an Audit chain on a server a Guard is
	// installed on, an Audit chain around a Wrap'd handler).
	ParentID string `json:"parent_id,omitempty"`
	// RequestID is the id a proxy in front of the server gave the request
	// (mcpguard's gateway: its correlation id, in the header
	// X-Mcp-Gateway-Request-Id; see mcpguard.Options.RequestIDHeader), so
	// that a record of the server can be joined with the proxy's. It is
	// what the request said: anyone who reaches the server directly can
	// set it. "" when there is none.
	RequestID string   `json:"request_id,omitempty"`
	SessionID string   `json:"session_id,omitempty"`
	Subject   string   `json:"subject,omitempty"`
	Roles     []string `json:"roles,omitempty"`
	Tool      string   `json:"tool,omitempty"`
	Class     string   `json:"class,omitempty"` // "read" | "write"
	Phase     Phase    `json:"phase"`           // "intent" | "outcome"
	Allowed   bool     `json:"allowed"`
	DryRun    bool     `json:"dry_run"`
	// Code is "" for an allowed call, else the refusal's code, e.g.
	// "FORBIDDEN". A call the guard allowed whose tool answered with a
	// tool error (isError, a result for the model to read) is allowed
	// with Code "" and Detail "tool reported an error". The round that asks
	// a client on protocol 2026-07-28 or later to confirm a call (an
	// input request, answered by the client's next call) is a record of
	// its own: not allowed, CONFIRMATION_REQUIRED, Detail "confirmation
	// requested", cost 0; an older client is asked within the call, which
	// has one record. A count of refusals leaves those rounds out by
	// their Detail.
	Code string `json:"code,omitempty"`
	// Detail says more, in words: for a call the Guard refused, its own
	// account of the refusal where it has one ("confirmation requested",
	// `user answered "decline"`), else the message the caller was told
	// (but for INVALID_ARGUMENTS, whose message names fields the caller
	// chose, UNAUTHENTICATED and TOOL_NOT_FOUND); never secrets or raw
	// arguments. A TOOL_NOT_FOUND of a tool that exists (at the gateway,
	// which does not know the downstream's tools: one a rule covers) but
	// is hidden from the caller says so ([DetailHidden]),
	// where the caller was told what a missing name's caller is; the
	// gateway's record of another policy refusal holds the policy's
	// reason ("unknown tool", "caller lacks a required role"). A tool's
	// handler that failed is "handler error", with
	// ": timed out" when it did (or ": its upstream is unavailable" for
	// mcpguard.ErrUpstreamUnavailable).
	// A write that ran to its end after its client went away says so. The
	// gateway's record of the next round of a multi round-trip, charged
	// nothing (its first round was charged for the logical call), begins
	// "next round of a multi round-trip, charged with its first".
	// A call admitted because the limiter's store failed and it fails open
	// says so ([DetailFailOpen]).
	// Every record of a call its user confirmed (its intent, its outcome,
	// and those of its later rounds) starts with "confirmed by the user",
	// followed by "; " and the rest where there is more.
	Detail     string  `json:"detail,omitempty"`
	LatencyMS  float64 `json:"latency_ms"`
	ArgsSHA256 string  `json:"args_sha256,omitempty"`
	// Cost is what the call was charged against the spend caps: its cost
	// once the limiter admitted it (or, with none, once it got that far);
	// 0 for a call refused before, for a dry run, for a round that asks
	// for a confirmation and for a write's intent record (its outcome
	// carries the charge), so that the costs of a trail add up to the
	// spend. A call refused after it was charged and given its charge back
	// has the part that stays charged: 0 when it was refused at once, more
	// when the refund came later (limiter.Limiter.Kept).
	Cost float64 `json:"cost,omitempty"`
	// ProtocolVersion and ClientName are the session's, as its initialize
	// request gave them. A guard reads them from the go-sdk's session;
	// the gateway, which keeps no session's initialize, records the
	// protocol version from the request's MCP-Protocol-Version header and
	// no client name.
	ProtocolVersion string         `json:"protocol_version,omitempty"`
	ClientName      string         `json:"client_name,omitempty"`
	Args            map[string]any `json:"args,omitempty"` // only fields a tool opted in to record
}

// Phase says whether an [Event] announces a call about to run (a write-ahead
// intent) or records how a decision or call ended.
type Phase string

// The phases of an [Event].
const (
	// PhaseIntent is the write-ahead record made before a write tool's handler runs.
	PhaseIntent Phase = "intent"
	// PhaseOutcome records the end of a call: allowed or denied, success or error.
	PhaseOutcome Phase = "outcome"
)

// DetailHidden is the Detail of the outcome record of a call to a tool that
// exists (at the gateway, one a rule covers) but is hidden from its caller,
// refused TOOL_NOT_FOUND: the caller is told what a missing name's caller
// is, the trail tells a probe of a hidden tool from a typo.
const DetailHidden = "hidden from the caller: it lacks a role the tool requires"

// DetailFailOpen is part of the Detail of the outcome record of a call the
// limiter admitted only because its store failed and the limiter fails
// open for the call's class (limiter.Options.FailOpenReads,
// FailOpenWrites): no cap was checked, and whether its Cost was counted is
// not known. An incident's trail tells the calls that ran uncapped.
const DetailFailOpen = "limiter unavailable: admitted without its caps (fail open)"

// Sink records events. Write must not retain e after it returns. A nil error
// means the event is recorded with the sink's stated durability (a durable
// sink: on stable storage). Implementations are safe for concurrent use.
type Sink interface {
	Write(ctx context.Context, e *Event) error
}

// SinkFunc adapts a function to a [Sink].
type SinkFunc func(ctx context.Context, e *Event) error

// Write calls f(ctx, e); a nil f records nothing and returns an error.
func (f SinkFunc) Write(ctx context.Context, e *Event) error {
	if f == nil {
		return errNilSinkFunc
	}
	return f(ctx, e)
}

// errNilSinkFunc is the failure of every Write of a nil [SinkFunc].
var errNilSinkFunc = errors.New("audit: nil SinkFunc")

// DurableWriter is implemented by sinks whose plain Write may return before
// the event is on stable storage (buffered sinks). WriteDurable returns nil
// only once e is durable: for a file, written and fsynced, with every event
// written before it; for SQL, committed, possibly ahead of events queued
// by Write that are not committed yet (see [SQLSink.WriteDurable]). The
// pipeline uses it for the write-ahead intent of a write tool.
type DurableWriter interface {
	WriteDurable(ctx context.Context, e *Event) error
}

// WriteDurable records e durably on s: through s.WriteDurable when s
// implements [DurableWriter], else through s.Write, whose nil error is then
// taken as the sink's statement that e is recorded. A sink that buffers must
// therefore implement DurableWriter; every buffered sink in this package does.
func WriteDurable(ctx context.Context, s Sink, e *Event) error {
	if s == nil {
		return ErrNoSink
	}
	if d, ok := s.(DurableWriter); ok {
		return d.WriteDurable(ctx, e)
	}
	return s.Write(ctx, e)
}

// A Keeper is a [Sink] that can take an event over instead of encoding it
// before it returns, and so put the encoding (and the hash of the call's
// arguments) off to when it writes its buffer, where the work runs in
// batches, off the caller's path. The guard pipeline uses Keep for its
// outcome records when its sink is a Keeper.
type Keeper interface {
	Sink
	// Keep records e as Write does, with the same durability and the same
	// errors. e and args become the sink's: the caller must not read or
	// modify them after Keep returns. The sink may set e's own fields, but
	// must not modify args or the slices and maps e references (Roles,
	// Args): they may be shared, with the caller's principal and with the
	// other sinks of a [FanoutSink]. When e.ArgsSHA256 is empty, the sink
	// records [ArgsSHA256] of args in it (nothing for empty args).
	Keep(ctx context.Context, e *Event, args json.RawMessage) error
}

// errNotOpened refuses the methods of a zero or nil JSONLSink or SQLSink.
var errNotOpened = fmt.Errorf("%w: the sink was never opened (use OpenJSONL or NewSQL)", ErrClosed)

// Errors returned by sinks in this package.
var (
	// ErrClosed is returned by a write to a closed sink, and (wrapped)
	// by every method of a zero or nil JSONLSink or SQLSink, which was
	// never opened.
	ErrClosed = errors.New("audit: sink closed")
	// ErrNoSink is returned by [WriteDurable] for a nil sink.
	ErrNoSink = errors.New("audit: no sink")
	// ErrInvalidEvent is returned for an event that cannot be encoded
	// or stored (a NaN or infinite number, a time outside years 0-9999
	// in its own location or with an offset of a day or more, a record
	// too large for the sink; a [SQLSink], which stores Unix nanoseconds,
	// refuses a time outside years 1678-2261 in UTC).
	ErrInvalidEvent = errors.New("audit: invalid event")
)

// ArgsSHA256 returns the lowercase hex SHA-256 of the canonical JSON of raw:
// object members sorted by the bytes of their keys (escapes decoded),
// members with equal keys left in their order (a handler gets the last),
// no insignificant whitespace, strings re-escaped the way encoding/json
// does, but each byte of invalid UTF-8 written as itself (not as \ufffd:
// "\xe2\x82" is one U+FFFD to a WHATWG decoder and "\xff\xff" two, and a
// handler that keeps the raw arguments tells every such byte apart;
// earlier versions hashed both as \ufffd\ufffd), numbers exactly as given:
// "\u0041" and "A" hash alike, 1 and 1.0 (or 100 and 1e2) do not. An
// escaped UTF-16 surrogate that is not half of a pair ("\ud800", or
// "\udc00" first) stays an escape, in lower case, where encoding/json reads
// U+FFFD: JavaScript's JSON.parse and Python's json.loads keep it, so
// {"a":"\ud800"} and {"a":"\ufffd"} are different arguments to a server
// written in either, and hash differently (earlier versions hashed such a
// surrogate as U+FFFD; a key with one still sorts where U+FFFD would).
// Two more cases differ, so that arguments a decoder reads differently hash
// differently: an object with a key of invalid UTF-8 and two keys that
// differ but that some decoder may read alike (Go reads each bad byte as
// U+FFFD, a WHATWG decoder such as JavaScript's each maximal invalid
// subpart: "\xe2\x82" is "\ufffd\ufffd" to one, "\ufffd" to the other) has
// its members sorted by their keys read with each run of invalid UTF-8 and
// U+FFFD as one U+FFFD, case-folded; an object of valid keys, two of which
// differ only in letter case (which encoding/json matches to one struct
// field, the last one winning), by their keys case-folded; in either,
// members whose keys compare alike so stay in their order. Other objects
// hash as in earlier versions. It returns "" for empty raw
// (or the JSON literal null), and the hash of the bytes as given when raw is
// not valid JSON or nests arrays and objects more than 1001 deep (the
// go-sdk refuses a message past 1000), so the record still identifies what
// was sent.
func ArgsSHA256(raw json.RawMessage) string {
	return string(AppendArgsSHA256(make([]byte, 0, 512), raw))
}

// AppendArgsSHA256 appends [ArgsSHA256] of raw to dst: 64 hex digits, or
// nothing where ArgsSHA256 returns "". It builds the canonical form in
// dst's spare capacity, so a caller whose dst has room for it (a few
// hundred bytes for small arguments) makes the hash without allocating.
func AppendArgsSHA256(dst []byte, raw json.RawMessage) []byte {
	return appendArgsHash(dst, nil, raw)
}

// ArgsHMAC returns the lowercase hex HMAC-SHA256 under key of the same
// canonical JSON of raw as [ArgsSHA256] hashes, or "" where ArgsSHA256
// returns "". Unlike a plain hash, it cannot be reversed by hashing guesses
// (an account id, a quantity of 0 to 20) without the key: a guard or gateway
// given a key records it in Event.ArgsSHA256 instead.
func ArgsHMAC(key []byte, raw json.RawMessage) string {
	return string(AppendArgsHMAC(make([]byte, 0, 512), key, raw))
}

// AppendArgsHMAC appends [ArgsHMAC] of raw under key to dst, as
// [AppendArgsSHA256] appends the plain hash. An empty key appends the plain
// hash.
func AppendArgsHMAC(dst, key []byte, raw json.RawMessage) []byte {
	return appendArgsHash(dst, key, raw)
}

// appendArgsHash appends the hash of raw's canonical form: HMAC-SHA256
// under key, or SHA-256 for an empty key.
func appendArgsHash(dst, key []byte, raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return dst
	}
	n := len(dst)
	canon, ok := appendCanonical(dst, raw)
	in := canon[n:]
	switch {
	case !ok:
		in = raw
	case string(in) == "null":
		return canon[:n]
	}
	if len(key) > 0 {
		return hex.AppendEncode(canon[:n], keyedSum(key, in))
	}
	sum := sha256.Sum256(in) // stays on the stack: the unkeyed path allocates nothing
	return hex.AppendEncode(canon[:n], sum[:])
}

// keyedSum returns the HMAC-SHA256 of in under key.
func keyedSum(key, in []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(in)
	return m.Sum(nil)
}
