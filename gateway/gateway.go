package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/corrid"
	"github.com/mcpguard/mcpguard/internal/limitcheck"
	"github.com/mcpguard/mcpguard/internal/logsafe"
	"github.com/mcpguard/mcpguard/internal/loopback"
	"github.com/mcpguard/mcpguard/internal/textsafe"
	"github.com/mcpguard/mcpguard/internal/typednil"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Options configures a [Gateway]. A nil *Options means all defaults. New
// copies the struct; later changes to it have no effect.
type Options struct {
	// Policy decides every tools/call. Nil means [DefaultPolicy]: every tool
	// is a read, admin_* tools need the role admin, forbidden tools stay
	// visible in tools/list and are refused at call time. The gateway has
	// no way to ask a human: a call whose rule asks for a confirmation
	// (policy.ToolRule.Confirm) is refused (-32001, 403,
	// CONFIRMATION_REQUIRED), never forwarded, and FilterToolsList hides
	// the tool. New (and SetPolicy) refuses a policy with two tool rules
	// whose names differ only in case and whose demands differ (class,
	// roles, confirmation, cost, argument limits, the write allowlist): a
	// downstream that matches names leniently runs one tool under either
	// name, so a caller would choose the weaker rule by its spelling. A
	// tool the policy hides from the caller (without ShowForbidden) is
	// refused as one no rule covers (-32601); but with a Default rule a
	// name no rule names is forwarded and answered by the downstream, in
	// its own words, so a caller can tell a tool its own rule hides (with
	// roles the Default's do not imply) from a missing one. (A role rule
	// hides a missing name it matches as it hides a tool.)
	Policy *policy.Policy
	// Path is the path the gateway serves MCP on. Empty means "/mcp".
	Path string
	// HealthPath answers GET with liveness and the configured upstream
	// (but for a loopback address asked under another name, DNS
	// rebinding, as the MCP path refuses it: 403, unless
	// DisableLocalhostProtection). Empty means "/healthz"; "-" disables
	// it. It may not be Path.
	HealthPath string
	// FilterToolsList removes from tools/list results the tools the caller
	// may not call; an answer the gateway cannot read as JSON, or as its
	// client reads it (compressed, or an event stream in another charset
	// than UTF-8), becomes an upstream error (502) instead of being relayed
	// unfiltered. A filtered result's cacheScope is "private", set when
	// the downstream sent none (absent means "public" on protocol
	// 2026-07-28). False (the default) relays tools/list unchanged. (A
	// redirect is never relayed.) It reads the answers to tools/list
	// requests: a listing a downstream sends elsewhere (on a GET stream,
	// or, at a downstream that accepts a request id in flight twice, in
	// the stream of another request the client gave the same id) is
	// filtered only when Pins are set too, which read every answer.
	FilterToolsList bool
	// Pins, when not nil, holds every tools/list answer to the tool
	// definitions approved ([Pins], made by [ParsePins] or
	// [TrustOnFirstUse]; New refuses a zero Pins): a tool listed with another definition
	// than its pin (or, with a fixed set, one the set does not name) is
	// withheld from the answer, logged and recorded, and its calls are
	// refused. The gateway then reads every answer, GET streams included,
	// for listings (see [Pins]): a JSON answer it cannot read as JSON is an
	// upstream error, and so is an answer compressed or an event stream in
	// another charset than UTF-8; an event that is not JSON is dropped (one
	// of empty data, no message, is relayed: a priming event's id), and
	// a JSON answer is read whole (up to 64 MiB) before it is relayed. The
	// answer to a notification or a client's response, which no client
	// reads, is relayed without its body.
	Pins *Pins
	// Timeout bounds the wait for the downstream's response headers and,
	// for a POST, every silence between two pieces of its body; once a
	// POST's client has gone, it bounds the rest of the answer too, from
	// when the client was last seen. Zero (or a negative value) means 30
	// seconds. A GET stream (server-to-client events), and the event
	// stream answering a subscriptions/listen request, are bounded only
	// until their headers arrive, and end with their client.
	// It also bounds every write of an answer to the client (in pieces of
	// at most 32 KiB; an answer of the gateway's own of at most 2 KiB is
	// left to net/http): a client that stopped reading counts as gone
	// (see the package doc).
	// An answer cut by the timeout after its relaying began reaches the
	// client cut short, as a broken connection (see the package doc).
	Timeout time.Duration
	// MaxBodyBytes caps a request body: a POST's, and a GET's or a
	// DELETE's, which is read and dropped, not forwarded (over the cap:
	// -32600, HTTP 413). Zero (or a negative value) means 4 MiB. A body is
	// read once its caller's token is accepted (of a POST whose token is
	// refused or cannot be judged, at most 64 KiB are read, for its id and
	// records: a longer body, or one encoded or in another charset, is left
	// unread and an HTTP/1 connection closed). The gateway sets no deadline
	// on a body's arrival: a client that stalls in one holds its handler
	// until it leaves, unless the http.Server's ReadTimeout bounds it, which
	// net/http lifts once the body has been read, so that it cuts no answer
	// or stream (examples/gateway sets it to its --timeout).
	MaxBodyBytes int64
	// Transport sends requests downstream. Nil means the gateway's own
	// HTTP/1.1 client, which writes each request and reads its answer on
	// the handler's goroutine over a keep-alive pool (256 idle connections
	// per host, no compression, a dial timeout of 30 s, TCP keep-alive
	// probes every 30 s). A connection idle for 90 s, or for the
	// downstream's Keep-Alive timeout less a second (the last it announced,
	// on any answer that kept its connection: Node leaves the header out of
	// the TypeScript SDK's event streams), is not used again: a request
	// must not meet the downstream's closing of it (a tools/call is never
	// sent twice). A
	// downstream that closes idle connections sooner without ever
	// announcing it can still close one as a request is sent on it.
	// net/http's Transport hands each request and answer between
	// goroutines, which costs more latency than the proxying in a gateway
	// process. [NewTransport] returns a net/http Transport tuned alike,
	// for callers that want that one. Another Transport is given each
	// request with a URL of its own (one that modifies it changes no other
	// request) and a copy of its body, which it may read after RoundTrip
	// returned (http.RoundTripper allows it). A panic of another Transport,
	// in RoundTrip or in its answer body's Read or Close, is logged with its
	// stack and fails the call, which gives back its in-flight place: one
	// in RoundTrip with -32603 (HTTP 500, INTERNAL); one in Read as a
	// broken answer of the downstream does, with -32003 (HTTP 502, or the
	// member's error in a batch) when the gateway reads the answer whole
	// before it answers (a batch member's), cut short when it had begun
	// relaying it.
	// As with net/http's Client, an answer's nil Body reads as empty, and
	// a nil answer with a nil error, a nil Body with a positive
	// ContentLength, or a status outside 200 to 999 (the gateway's own
	// client skips or refuses a 1xx), fails the call as the downstream's
	// (HTTP 502).
	// Timeout, and a client that leaves, reach another Transport only as
	// its request's context ending, as net/http's Client's do: one whose
	// RoundTrip, or answer body's Read, does not return once that context
	// ended, or whose answer to a POST goes on handing over data after it
	// (a POST's answer is read to its end for the call's outcome), holds
	// the call, its handler and its in-flight place, until it does. New
	// refuses a nil pointer in it (an *http.Transport variable left unset),
	// whose every call would fail.
	Transport http.RoundTripper
	// TLSConfig, if non-nil, is the TLS configuration of the gateway's own
	// client for an https upstream: RootCAs for a downstream behind a
	// private CA (nil: the system's roots), Certificates or
	// GetClientCertificate for one that requires a client certificate
	// (mutual TLS, so that only the gateway reaches it). It is cloned by
	// [New] (later changes to its fields are not seen, but changes to what
	// they share, such as the RootCAs pool or the Certificates' elements,
	// are; GetClientCertificate can give a renewed certificate); a clone's
	// ServerName, when empty, is the upstream's host, its NextProtos is
	// http/1.1, and its MinVersion, when zero, TLS 1.2. A handshake that
	// fails, and a new connection the downstream closes before answering
	// (a TLS 1.3 downstream refuses a client certificate only after the
	// handshake), fail the call with -32003 (HTTP 502), logged with
	// "TLS". New refuses it with a
	// Transport, which has its own, and with an http upstream, where it
	// would be ignored. Nil means the zero configuration: the system's
	// roots and no client certificate.
	TLSConfig *tls.Config
	// Limiter, if non-nil, applies rate, spend and in-flight caps to every
	// allowed tools/call before it is forwarded, keyed by the Mcp-Session-Id
	// header (session scope) and the principal's subject (user scope). A
	// refused call gets -32029 and HTTP 429 with Retry-After. A call it
	// admitted that is then refused without being forwarded (a write
	// without a durable intent) is given back its calls and cost
	// (limiter.Limiter.Refund: less what may have refilled meanwhile), and
	// so is one whose client went away before it was sent, and, through
	// the gateway's own client (no Transport set), one that certainly
	// never reached the downstream (the connection refused, its host name
	// not resolved, another dial error, its certificate refused): clients
	// retrying through an outage do not use up their caps on calls that
	// never ran. (Through another Transport a failure gives nothing
	// back. A written POST is never sent again: the gateway gives another
	// Transport no GetBody for a POST with an Idempotency-Key, without
	// which net/http's does not send it again after it was written.) A forwarded
	// call keeps its in-flight place until the downstream's answer has
	// been read, also when its client hangs up first (then for at most
	// Timeout: see the package doc). The answer is the POST's: a server
	// that ends a call's event stream before its response, for its client
	// to poll (SEP-1699; the TypeScript SDK's closeSSEStream), and sends the
	// response on a later GET, has the call's place given back when that
	// stream ends, while its tool may still run. A call its store-backed limiter
	// refuses because the request's context had ended (or its deadline
	// passed) before it decided is recorded as the client's leaving, not
	// the limiter's failure; one whose deadline passed is answered -32003
	// with 504 (UPSTREAM_UNAVAILABLE), as a call its deadline left unsent
	// is. A call it admits because its store failed and it fails open
	// (limiter.Options) has audit.DetailFailOpen in its outcome record's
	// detail. Nil means no caps. [New] refuses a limit for one tool that caps
	// nothing: a tool the policy has no rule for, or, without Cost, a
	// spend limit for a tool whose rules cost nothing; and, without Cost,
	// a spend limit (for one tool or every tool) whose Max is below the
	// Cost of a rule it caps (a tool rule, the Default rule, or that of a
	// write allowlist entry that is a tool's name only under folding,
	// charged the larger of the two), which would refuse every call
	// charged under that rule for ever: a call of more than Max is never
	// admitted (a write tool not on the write allowlist, never called,
	// excepted). A Cost equal to Max admits one call. The next round of a
	// multi round-trip (protocol 2026-07-28: a tools/call that carries
	// the requestState of an input_required answer the downstream gave
	// the same caller for the same tool and arguments, at most 15 minutes
	// before; a guarded downstream asks its user to confirm so) counts no
	// call and no cost, once: the round that asked was charged for the
	// logical call (and keeps its charge when the user declines); one
	// that the gateway or the downstream refuses as retryable before it
	// ran (the library's "retryable": true) may be sent again so. Its
	// class and cost are those of its first round: a next round that
	// SetPolicy has made a write, or priced otherwise, since is charged
	// (Cost is asked for every round). The gateway remembers the
	// requestStates it relayed in memory, at most 8192: a next round that
	// reaches another replica, or this one after a restart, is charged as
	// a call, as is one whose question came on another stream than its
	// POST's (SEP-1699) or in an answer (the whole of its event stream)
	// over 64 KiB, unless Pins read it whole.
	Limiter *limiter.Limiter
	// Cost returns the spend units of an allowed call. Nil means the cost of
	// the tool's policy rule. A call whose name equals a rule's only under
	// case folding ("TRIGGER_REFUND" for trigger_refund: a downstream
	// lenient with the case of names runs that tool) costs the larger of
	// Cost's for its name and for the rule's. Cost is asked for the name as
	// called otherwise: one that prices a tool without a rule of its own (the
	// Default rule's) should match names by policy.NameKey, as a Limit for a
	// tool does, or another spelling of the name is priced as another tool.
	// args reads the call's top-level numeric arguments strictly, from a copy
	// of its own: Cost may keep it and read it after it returned. A call
	// whose arguments name a field twice (two
	// names equal under case folding, each cut at a NUL) is refused before
	// Cost (-32602, HTTP 400): a downstream may read the field as either
	// spelling, so no cost can be read from it. A cost that is
	// negative, NaN or infinite (limiter.CheckCost), or a panic of Cost,
	// refuses the call (-32603, HTTP 500, INTERNAL), with or without a
	// Limiter, as the library's pipeline does, and is logged: a Cost that
	// cannot price a call (its amount absent) may return NaN to refuse it.
	Cost func(tool string, args policy.Args) float64
	// Audit, if non-nil, receives one outcome event for every tools/call
	// decision, denials included, and a durable intent event before a write
	// tool's call is forwarded (no durable intent, or none within Timeout:
	// -32603, HTTP 503, not forwarded; the sink must give up when its
	// context ends, as the package audit's sinks do). A request refused
	// before its messages could be read (its Origin, its HTTP method, its
	// token when the gateway does not read its
	// body, whatever it holds: see MaxBodyBytes; or, once its caller is
	// authenticated, whom its record names, a POST body encoded or in
	// another charset, too large, unreadable, not JSON, or not an object or
	// a non-empty array of at most 256 messages, or a GET's or DELETE's
	// body too large or unreadable) gets one outcome event without a tool.
	// A tools/call refused for its name's characters gets one without a
	// tool, the name quoted, escaped and cut in its detail (see the
	// package doc, which also says what a forwarded call's outcome
	// records of the downstream's answer: its HTTP status when not a 2xx,
	// and, where the gateway reads it, a JSON-RPC error or a tool error).
	// Arguments are recorded only as their SHA-256,
	// or with ArgsKey as their HMAC-SHA256. A panic of the sink is a failed
	// write, logged with its stack (a write tool's intent not recorded is
	// refused, AUDIT_UNAVAILABLE). The outcome events are written without
	// a deadline (a client that left does not cut its record short): a
	// sink that never returns holds the request's handler, and so
	// http.Server's Shutdown, until it does. New refuses a nil pointer (a
	// *audit.JSONLSink whose OpenJSONL failed) or func in it, whose every
	// record would fail.
	Audit audit.Sink
	// ArgsKey, when set, makes the audit events' args_sha256 an HMAC-SHA256
	// under this key ([audit.ArgsHMAC]): a plain hash of arguments with few
	// possible values (an account id, an amount) is reversed by hashing
	// guesses. At least 16 bytes; nil means the plain hash.
	ArgsKey []byte
	// Logger receives the decision logs (correlation id, principal, method,
	// tool, outcome; never arguments or tokens). The two lines of a single
	// POST forwarded and relayed as it came (its decision and the
	// upstream's answer) carry no source location (a handler's AddSource
	// shows none); the others (a batch's, a GET's, a listing the gateway
	// filters or checks) may.
	// A panic of its handler is the request's, on whichever goroutine it
	// logged (a batch member's too): the server that runs the gateway
	// recovers it (net/http breaks that request's connection). Nil means
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock for limits and audit times. Nil means time.Now.
	Now func() time.Time
	// ResourceMetadata, if non-nil, makes the gateway an OAuth 2.0
	// protected resource that MCP clients can discover, as the MCP
	// authorization specification asks (RFC 9728): the gateway serves this
	// document, without authentication, at the well-known URI of its
	// Resource ("/.well-known/oauth-protected-resource" followed by the
	// Resource's path), and every 401 challenge it sends names that URI in
	// its resource_metadata parameter (and ScopesSupported, if any, in its
	// scope parameter), so that a client can find the authorization server
	// that issues the tokens the gateway accepts.
	//
	// Resource is required: the URL clients use for the gateway's MCP
	// endpoint (the audience its tokens should carry), absolute, of
	// printable ASCII (a punycode host, the path percent-escaped as
	// net/url escapes it), https or http on a loopback host, without user
	// information, query, fragment or a dot segment ("." or ".." in its
	// path), and its well-known path neither Path nor HealthPath. The
	// gateway serves the well-known path itself, so a proxy in front of it
	// must pass that path through unchanged.
	// AuthorizationServers must hold at least one issuer URL, each
	// absolute, of printable ASCII, https or http on a loopback host,
	// without user information or fragment. BearerMethodsSupported, when
	// set, must be ["header"] (the only way the gateway reads a token);
	// empty means that. ScopesSupported entries must be OAuth scope tokens. The other
	// fields are served as given. The struct is copied by New.
	ResourceMetadata *oauthex.ProtectedResourceMetadata
	// AllowedOrigins are the web origins ("https://app.example.com", a
	// scheme, a host and an optional port; "*" for any) whose pages may
	// call the gateway. Write them as browsers send them: the host in
	// ASCII (an internationalized name in its xn-- form); a port equal to
	// the scheme's default (443, 80) may be given or not; each origin whole
	// (a pattern, "https://*.example.com", is refused: no browser sends
	// one). The MCP
	// Streamable HTTP transport has servers validate the Origin header: a
	// request to the MCP path with an Origin that is neither listed nor the
	// request's own (http or https, its host and port those of the Host
	// header, the default port written or not, nothing after them) is
	// refused with -32001 and 403 before its token is read. A listed origin
	// gets CORS: its preflight (OPTIONS) is answered without a token,
	// cacheable for 600 s (Access-Control-Max-Age, Vary: Origin), allowing
	// the headers MCP clients send (Authorization, Mcp-Session-Id,
	// Mcp-Protocol-Version, Last-Event-ID, protocol 2026-07-28's Mcp-Method
	// and Mcp-Name, and the Mcp-Param-* ones it asks for), and every answer
	// to it names it in Access-Control-Allow-Origin (replacing any CORS
	// header of the downstream's) and exposes Mcp-Session-Id,
	// Mcp-Protocol-Version, WWW-Authenticate and Retry-After; credentials
	// are the Authorization header, never cookies, so no
	// Access-Control-Allow-Credentials. The
	// downstream is sent neither Origin nor Sec-Fetch-Site, which the
	// gateway judged: a downstream that checks them would refuse every
	// page let through. Requests without an Origin (clients that are not
	// browsers) are not affected. Nil means the request's own origin only.
	AllowedOrigins []string
	// MaxStreams caps the event streams one principal (by its subject)
	// holds open through the gateway at once: its GET streams (a
	// Streamable HTTP session's stream of server-to-client messages) and
	// the streams answering its subscriptions/listen requests (protocol
	// 2026-07-28), which stay open, silent for long, until their client
	// leaves, and which a downstream (a stateless one above all) may accept
	// in any number: each holds a handler, a downstream connection and
	// their goroutines. A stream counts from when it is sent downstream
	// until it ends, however it ends (its client leaves, the downstream ends
	// it or fails, the server closes its connection); a GET answered with
	// something other than a stream (405) counts only while it is answered.
	// One past the cap is refused and never forwarded, logged and recorded
	// as a refusal without a tool: -32029 with 429, a Retry-After of 1 s
	// and CONCURRENCY_LIMIT_EXCEEDED (a GET's answer has a null id). A
	// go-sdk client whose session's first GET, or whose
	// subscriptions/listen, is refused so goes on without that stream (it
	// does not ask again). It would end its session on an error status
	// (any, 405 included) to a GET that reconnects a stream, so such a
	// GET (one with a Last-Event-ID, or of a session whose GET was
	// forwarded before) is answered 200 instead, with an event stream that
	// ends at once: a comment giving the refusal, one event of no data
	// whose id is the gateway's, and a retry field of 5 s, after which the
	// client reconnects, as often as it is refused, until a place is free
	// (the Last-Event-ID it resumed from, if any, is sent downstream then).
	// A GET with neither (to a stateless downstream, which names no session
	// and may send no event ids) cannot be told from a first one: it is
	// refused 429. Zero means 32; a negative value means no cap. (A
	// subscriptions/listen in a batch, which protocol 2026-07-28 has not,
	// counts while the batch runs, and ends as a single one does: with its
	// client, or at EndStreams.)
	MaxStreams int
	// DisableLocalhostProtection turns off the gateway's DNS rebinding
	// protection, which, as the go-sdk's StreamableHTTPHandler does,
	// refuses with -32001 and 403 a request to the MCP path that came to a
	// loopback address with a Host header naming something else (a page
	// of evil.example whose name was rebound to 127.0.0.1 sends Host
	// evil.example, and could otherwise use a token it knows, such as a
	// demo token, against a gateway on the user's machine). The gateway
	// sends its downstream the downstream's own Host, so the downstream's
	// protection cannot see the client's. Set it only behind a proxy on
	// the same machine that passes on the public Host.
	DisableLocalhostProtection bool
	// Signer, if non-nil, signs every request sent downstream (a single
	// POST, each batch member's own request, a GET stream, a DELETE) in
	// [token.HeaderSignature], over its method, target, exact body, the
	// identity headers the gateway set and its Mcp-Session-Id (a session
	// the gateway let the principal use), so that a downstream that
	// wraps its handler in [token.GatewaySigner.Verify] takes the
	// identity only from the gateway (see the token package's "Signed
	// gateway identity"). A request is signed once, when its header is
	// final: the gateway's own client, which may send it again on a new
	// connection when a reused one was closed before the answer, sends
	// the same signature, which a downstream that read the first copy
	// refuses as a replay. Nil means unsigned; so does a GatewaySigner not
	// made by token.NewGatewaySigner, which holds no key.
	Signer *token.GatewaySigner
	// TransientStatusOK answers with status 200 a refusal of the
	// gateway's own to a JSON-RPC request (one with an id; not a client's
	// response to a server's request, which a 200 would tell its client
	// was taken) that it would
	// answer 429, 500, 502, 503 or 504: a cap (CodeLimitExceeded), a call
	// it could not price or whose Transport panicked (CodeInternal), the
	// downstream unavailable or timed out (CodeUpstreamUnavailable), the
	// audit sink down. The JSON-RPC error, its data and a Retry-After
	// header are as ever. A go-sdk client (v1.8.0) takes those five
	// statuses for transient failures of its transport and reads no
	// body: its caller sees the status text alone ("Too Many Requests"),
	// not the error's code, message or retry_after_seconds, so a model
	// retries at once; with 200 it gets the JSON-RPC error. Monitoring that counts
	// statuses sees those refusals as 200s then (the decision logs and
	// audit records are unchanged). An answer the downstream gave is
	// relayed as it came, whatever this says.
	TransientStatusOK bool
}

// A Gateway is an http.Handler that authenticates each request with a
// bearer token, authorizes each tools/call with a policy and forwards what
// is allowed to one downstream MCP Streamable HTTP endpoint. A Gateway is
// safe for concurrent use.
type Gateway struct {
	upstream    *url.URL
	upstreamStr string
	auth        Authenticator
	// pol is the policy, replaced whole by SetPolicy; a request loads it
	// once and is decided by what it loaded.
	pol          atomic.Pointer[policy.Policy]
	path         string
	healthPath   string
	filter       bool
	pins         *Pins
	timeout      time.Duration
	maxBody      int64
	rt           http.RoundTripper
	signer       *token.GatewaySigner
	lim          *limiter.Limiter
	rounds       rounds // the next rounds of multi round-trips, with lim
	cost         func(string, policy.Args) float64
	sink         audit.Sink
	argsKey      []byte
	log          *slog.Logger
	now          func() time.Time
	bufs         sync.Pool
	healthAnswer []byte
	sessions     *sessions
	streams      streamCount   // Options.MaxStreams
	ends         streamEnds    // EndStreams
	streamRetry  time.Duration // the SSE retry of [Gateway.waitStream]
	ids          corrid.Source
	resource     *resourceMetadata // nil without Options.ResourceMetadata
	origins      origins
	// noLocalhostGuard is Options.DisableLocalhostProtection.
	noLocalhostGuard bool
	// transientOK is Options.TransientStatusOK.
	transientOK bool
	// ownClient is whether rt is the gateway's own client, which never
	// modifies a request (see [Gateway.outboundRequest]).
	ownClient bool
}

// DefaultPolicy returns the gateway's default policy: tools of the
// downstream are not known in advance, so every tool is a read; the role
// rule admin_* -> admin is one row of data; tools a caller lacks the role
// for stay visible (ShowForbidden) and calling them is refused with -32001.
func DefaultPolicy() *policy.Policy {
	p, err := policy.New(DefaultPolicyConfig())
	if err != nil {
		// The configuration is a constant that policy.New accepts; a
		// failure is a programming error caught by the package tests.
		panic("gateway: default policy: " + err.Error())
	}
	return p
}

// DefaultPolicyConfig returns the configuration of [DefaultPolicy], for
// callers that want to add rows (argument limits, more role rules) to it.
func DefaultPolicyConfig() policy.Config {
	return policy.Config{
		Default:       &policy.ToolRule{Class: policy.Read},
		RoleRules:     []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		ShowForbidden: true,
	}
}

// NewTransport returns a net/http Transport tuned for one busy downstream
// (keep-alive, 256 idle connections per host, no compression, no proxy,
// HTTP/1.1), to set as Options.Transport in place of the gateway's own
// client. Unlike that client, it does not read a downstream's Keep-Alive
// timeout: a downstream that closes idle connections sooner than 90 s
// (Node, under the TypeScript SDK, after 5 s) can close one as a request
// is sent on it.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	t.IdleConnTimeout = 90 * time.Second
	t.DisableCompression = true
	t.ForceAttemptHTTP2 = false
	t.Proxy = nil
	return t
}

// undecodedPath reports whether a Path or HealthPath holding r could not
// be a request's decoded path as written: a query's "?", a fragment's "#",
// an escape's "%" (the request's is decoded), or an ASCII control character.
func undecodedPath(r rune) bool {
	return r == '?' || r == '#' || r == '%' || r < ' ' || r == 0x7f
}

// shownRawURL quotes raw, a URL that may not parse, for an error: without
// its query or fragment, and with what may be user information as "…".
// Since raw may be malformed (a scheme left out or given one slash, a
// password holding an unescaped "/", "?" or "#"), all that comes before
// its last "@" after the "scheme://" is taken for user information; and
// when a "?" or "#" comes before that "@", which cannot tell a password
// from a query, all that comes after the "scheme://" is hidden.
func shownRawURL(raw string) string {
	start := 0
	if i := strings.Index(raw, "://"); i > 0 && isScheme(raw[:i]) {
		start = i + len("://")
	} else if strings.HasPrefix(raw, "//") {
		start = len("//")
	}
	rest := raw[start:]
	at := strings.LastIndexByte(rest, '@')
	if q := strings.IndexAny(rest, "?#"); q >= 0 {
		if at > q {
			return strconv.Quote(raw[:start] + "…")
		}
		rest = rest[:q]
	}
	if at >= 0 {
		rest = "…" + rest[at:]
	}
	return strconv.Quote(raw[:start] + rest)
}

// isScheme reports whether s is a URL scheme (RFC 3986): a letter, then
// letters, digits, "+", "-" or ".".
func isScheme(s string) bool {
	for i, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// checkFoldedRules refuses a policy with two tool rules whose names equal
// only under case folding ("refund" and "Refund") and that differ in what
// they demand (class, roles, confirmation, cost, argument limits, a place
// on the write allowlist): a downstream that matches names leniently runs
// one tool under either name, so a caller would pick the weaker rule by
// its spelling. Rules that demand the same are allowed: roles and
// argument limits are compared as sets, whatever their order.
func checkFoldedRules(p *policy.Policy) error {
	byKey := map[string]string{}
	allow := p.WriteAllowlist()
	allowed := func(name string) bool {
		return slices.Contains(allow, "*") || slices.Contains(allow, name)
	}
	for _, name := range p.Tools() {
		k := policy.NameKey(name)
		other, seen := byKey[k]
		if !seen {
			byKey[k] = name
			continue
		}
		a, _ := p.Resolve(other)
		b, _ := p.Resolve(name)
		if a.Class != b.Class || a.Confirm != b.Confirm || a.Cost != b.Cost ||
			!slices.Equal(limitsKey(a.ArgLimits), limitsKey(b.ArgLimits)) ||
			!slices.Equal(roleSetsKey(p.RequiredRoles(other)), roleSetsKey(p.RequiredRoles(name))) ||
			a.Class == policy.Write && allowed(other) != allowed(name) {
			return fmt.Errorf("gateway: the policy's rules for tools %q and %q differ, but their names differ only in case: a downstream that matches names leniently runs one tool under either, by the weaker rule; give them the same rule, or keep one", other, name)
		}
	}
	return nil
}

// roleSetsKey returns role sets (each satisfied by any one of its roles,
// all of them needed) in a form that compares equal for the same demand:
// each set sorted without repeats, as one string, the sets sorted.
func roleSetsKey(sets [][]string) []string {
	out := make([]string, 0, len(sets))
	for _, s := range sets {
		s = slices.Clone(s)
		slices.Sort(s)
		out = append(out, strings.Join(slices.Compact(s), "\x00"))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// limitsKey returns argument limits (all must hold) in a form that
// compares equal for the same demand: one string a limit, sorted.
func limitsKey(ls []policy.ArgLimit) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		ex := slices.Clone(l.ExemptRoles)
		slices.Sort(ex)
		lo := "none"
		if l.Min != nil {
			lo = strconv.FormatFloat(*l.Min+0, 'g', -1, 64) // -0 as 0
		}
		out = append(out, strconv.Quote(l.Field)+" "+strconv.FormatFloat(l.Max+0, 'g', -1, 64)+" "+lo+" "+
			strings.Join(slices.Compact(ex), "\x00"))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// checkLimitTools refuses a limit of l for one tool that caps nothing (see
// limitcheck.Find): no call p admits is of that tool, or, for a spend limit
// when there is no Cost function (cost is nil), no call of the tool can
// cost anything: a call is then charged its rule's Cost, and no rule it
// may be charged under has one. Without a Cost function it also refuses a
// spend limit (for one tool or every tool) whose Max is below the Cost of
// a rule it caps: every call charged under that rule would be refused for
// ever.
func checkLimitTools(p *policy.Policy, l *limiter.Limiter, cost func(string, policy.Args) float64) error {
	if l == nil {
		return nil
	}
	switch pr := limitcheck.Find(p, l.Limits(), func(string, string) bool { return cost != nil }); {
	case pr == nil:
		return nil
	case pr.NoRule:
		return fmt.Errorf("gateway: limiter limit %v: the policy has no rule for tool %q, so the limit caps nothing; name a tool of the policy, or leave Tool empty for every tool", pr.Limit, pr.Limit.Tool)
	case pr.Cost > 0:
		rule := fmt.Sprintf("tool %q", pr.Rule)
		if pr.Rule == "" {
			rule = "the policy's Default rule"
		}
		return fmt.Errorf("gateway: limiter limit %v: a call under %s costs %v (its rule's Cost, and no Options.Cost), more than the limit's Max, so every such call would be refused for ever; raise Max to at least %v, lower the Cost, or set Options.Cost", pr.Limit, rule, pr.Cost, pr.Cost)
	default:
		return fmt.Errorf("gateway: limiter limit %v: tool %q costs nothing (no Cost in its rule, and no Options.Cost), so the limit caps nothing; give its rule a Cost, or set Options.Cost", pr.Limit, pr.Limit.Tool)
	}
}

// shownURL is u as logs and the health answer show it: without its user
// information, query or fragment, any of which may hold a secret (a user
// name may be a token: https://TOKEN@host; a fragment is never sent, so
// only something pasted in with the URL can be there).
func shownURL(u *url.URL) string {
	v := *u
	v.User, v.RawQuery, v.ForceQuery, v.Fragment, v.RawFragment = nil, "", false, "", ""
	return v.String()
}

// New returns a Gateway forwarding to upstream, an absolute http or https
// URL of the downstream's MCP endpoint, and authenticating with auth. It
// returns an error for a bad URL or one with user information (the gateway
// sends no credentials of its own downstream; its errors never show the
// URL's user information or query), a nil auth, an ArgsKey shorter than 16
// bytes, a limit of the Limiter for one tool the policy has no rule for
// (a typo: it would cap nothing; with a Default rule every name has one)
// or, for a spend limit without a Cost function, whose rules cost nothing
// (no Cost in its rule, in the rule of a name equal to it under case
// folding, or in the Default rule: every call is charged 0), a spend
// limit without a Cost function whose Max is below the Cost of a rule it
// caps (a tool rule, or the Default rule: every call charged under it
// would be refused for ever; a Cost equal to Max admits one call),
// a Path or HealthPath that does not begin with "/" or that holds
// "?", "#", "%" or an ASCII control character (each is matched against a
// request's decoded path, without its query), a Path equal to the
// HealthPath, a TLSConfig with a Transport or an http upstream, or a
// policy with two tool rules whose names differ only in case and whose
// demands differ (see Options.Policy). A query in upstream is sent with
// every request as configured, and a client's query is then dropped;
// without one, the client's query is passed on.
func New(upstream string, auth Authenticator, opts *Options) (*Gateway, error) {
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gateway: upstream %s must be an absolute http(s) URL", shownRawURL(upstream))
	}
	if u.User != nil {
		// Neither the gateway's own client nor a Transport sends them (a
		// downstream expecting them would refuse every call).
		return nil, fmt.Errorf("gateway: upstream %s holds user information (user:password@), which the gateway never sends downstream", shownRawURL(upstream))
	}
	if auth == nil {
		return nil, errors.New("gateway: nil Authenticator")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if n := len(o.ArgsKey); n > 0 && n < 16 {
		return nil, fmt.Errorf("gateway: ArgsKey of %d bytes, want at least 16", n)
	}
	switch {
	case o.TLSConfig != nil && o.Transport != nil:
		return nil, errors.New("gateway: TLSConfig and Transport are both set: TLSConfig is the gateway's own client's; set the Transport's own TLS configuration instead")
	case o.Pins != nil && o.Pins.pin == nil:
		return nil, errors.New("gateway: Options.Pins not made by ParsePins or TrustOnFirstUse")
	case typednil.Is(o.Audit):
		// Not "no sink": one whose every record fails.
		return nil, fmt.Errorf("gateway: Options.Audit is a nil %T (did its OpenJSONL or NewSQL fail?)", o.Audit)
	case typednil.Is(o.Transport):
		// Not "the gateway's own client": one whose every call fails.
		return nil, fmt.Errorf("gateway: Options.Transport is a nil %T", o.Transport)
	case o.TLSConfig != nil && u.Scheme != "https":
		return nil, fmt.Errorf("gateway: TLSConfig is set but upstream %s is not https: it would be ignored", shownRawURL(upstream))
	}
	g := &Gateway{
		upstream: u, upstreamStr: shownURL(u), auth: auth,
		path: o.Path, healthPath: o.HealthPath, filter: o.FilterToolsList, pins: o.Pins,
		timeout: o.Timeout, maxBody: o.MaxBodyBytes, rt: o.Transport,
		lim: o.Limiter, cost: o.Cost, sink: o.Audit, argsKey: slices.Clone(o.ArgsKey), log: o.Logger, now: o.Now,
		signer:   o.Signer,
		sessions: newSessions(),
	}
	pol := o.Policy
	if pol == nil {
		pol = DefaultPolicy()
	}
	if err := checkFoldedRules(pol); err != nil {
		return nil, err
	}
	if err := checkLimitTools(pol, o.Limiter, o.Cost); err != nil {
		return nil, err
	}
	g.pol.Store(pol)
	if g.path == "" {
		g.path = "/mcp"
	}
	if g.healthPath == "" {
		g.healthPath = "/healthz"
	}
	if g.resource, err = newResourceMetadata(o.ResourceMetadata); err != nil {
		return nil, err
	}
	if g.origins, err = newOrigins(o.AllowedOrigins); err != nil {
		return nil, err
	}
	g.noLocalhostGuard = o.DisableLocalhostProtection
	g.transientOK = o.TransientStatusOK
	if !strings.HasPrefix(g.path, "/") {
		// No request's path is one: every request would be 404.
		return nil, fmt.Errorf("gateway: Path %q does not begin with /", g.path)
	}
	if g.healthPath != "-" && !strings.HasPrefix(g.healthPath, "/") {
		return nil, fmt.Errorf("gateway: HealthPath %q does not begin with / (\"-\" disables it)", g.healthPath)
	}
	// Both are compared with a request's path once decoded: "/mcp?v=1" is
	// reached only as "/mcp%3Fv=1", and "/a%20b" only as "/a%2520b".
	if i := strings.IndexFunc(g.path, undecodedPath); i >= 0 {
		return nil, fmt.Errorf("gateway: Path %q holds %q: it is matched against the request's decoded path, without its query", g.path, g.path[i])
	}
	if i := strings.IndexFunc(g.healthPath, undecodedPath); i >= 0 {
		return nil, fmt.Errorf("gateway: HealthPath %q holds %q: it is matched against the request's decoded path, without its query", g.healthPath, g.healthPath[i])
	}
	if g.path == g.healthPath {
		// Every request to it would be answered as the health check.
		return nil, fmt.Errorf("gateway: Path %q is also the HealthPath", g.path)
	}
	if g.resource != nil && (g.resource.path == g.path || g.resource.path == g.healthPath) {
		return nil, fmt.Errorf("gateway: ResourceMetadata's well-known path %q is also the gateway's Path or HealthPath", g.resource.path)
	}
	if g.timeout <= 0 {
		g.timeout = 30 * time.Second
	}
	if g.maxBody <= 0 {
		g.maxBody = 4 << 20
	}
	// A read takes one byte past the bound, to tell a body over it.
	g.maxBody = min(g.maxBody, math.MaxInt64-1)
	if g.streams.max = o.MaxStreams; g.streams.max == 0 {
		g.streams.max = defaultMaxStreams
	}
	g.streamRetry = defaultStreamRetry
	if g.rt == nil {
		c := newUpstreamClient()
		if o.TLSConfig != nil {
			c.tlsConfig = o.TLSConfig.Clone()
			if c.tlsConfig.MinVersion == 0 {
				c.tlsConfig.MinVersion = tls.VersionTLS12
			}
		}
		g.rt = c
	}
	_, g.ownClient = g.rt.(*upstreamClient)
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.now == nil {
		g.now = time.Now
	}
	g.bufs.New = func() any { return new(bytes.Buffer) }
	g.healthAnswer = appendJSON(nil, map[string]string{"status": "ok", "upstream": g.upstreamStr})
	g.ids.Init()
	return g, nil
}

// SetPolicy makes p the policy that decides every tools/call from now on,
// in place of Options.Policy or the policy an earlier SetPolicy set, for
// a gateway that reloads its rules without a restart (the example binary
// does on SIGHUP), keeping its clients' connections, sessions and streams.
// It returns an error, and keeps the policy it has, for a nil p or a
// policy New would refuse with the gateway's Limiter and Cost (a limit for
// one tool that p has no rule for, or that costs nothing under p; a spend
// limit whose Max is below the Cost of a rule of p it caps, without Cost;
// two tool rules whose names differ only in case and whose demands
// differ).
//
// A request is decided wholly by the policy of the moment it came: the
// messages of a batch by one policy, and the listings (FilterToolsList)
// in a POST's answer by that policy too, so calls under way finish as they
// were allowed. A GET's event stream, or a subscriptions/listen's, which
// may stay open for hours, has the listings it carries filtered by the
// policy of the moment. The gateway tells no client that its tools
// changed (no notifications/tools/list_changed): a client sees the new
// listing at its next tools/list, and a call it makes is decided by the
// new policy whatever its list shows. Nothing is recorded in
// Options.Audit: a caller that wants the change in its trail records it
// there itself.
func (g *Gateway) SetPolicy(p *policy.Policy) error {
	if p == nil {
		return errors.New("gateway: SetPolicy with a nil policy (DefaultPolicy is the default one)")
	}
	if err := checkFoldedRules(p); err != nil {
		return err
	}
	if err := checkLimitTools(p, g.lim, g.cost); err != nil {
		return err
	}
	g.pol.Store(p)
	return nil
}

// Policy returns the policy that decides tools/call now: Options.Policy
// (or DefaultPolicy), or the last one SetPolicy set.
func (g *Gateway) Policy() *policy.Policy { return g.pol.Load() }

// ServeHTTP implements http.Handler.
//
// The forwarding path keeps its frames small: the garbage collector halves
// the stack of an idle connection's goroutine, and a request that needs
// more than 8 KB of it then pays for a stack copy (see
// TestForwardFitsItsStack). Refusals and the rarer methods are served by
// functions of their own, off that path.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != g.path || r.URL.Path == g.healthPath && g.healthPath != "-" {
		g.serveAside(w, r)
		return
	}
	r = withTrimmedHeader(r)
	cid := g.ids.Next()
	cors, e := g.checkOrigin(r)
	if e != nil {
		g.refuseUnread(w, r, cid, e)
		return
	}
	if cors != "" {
		if r.Method == http.MethodOptions {
			preflight(w, r, cors)
			return
		}
		w = &corsWriter{ResponseWriter: w, origin: cors}
	}
	if r.Method == http.MethodPost {
		g.servePost(w, r, cid)
		return
	}
	g.serveNotPost(w, r, cid)
}

// serveAside answers a request for another path than the endpoint's: the
// health check, the protected resource's metadata, or 404.
func (g *Gateway) serveAside(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == g.healthPath && g.healthPath != "-" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if !g.noLocalhostGuard && loopback.Rebound(r) {
			// A page whose name was rebound to a loopback address
			// reads what it is answered: not the downstream's URL.
			http.Error(w, "Host not allowed", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		g.writeOwn(w, g.healthAnswer)
		return
	}
	if g.resource != nil && r.URL.Path == g.resource.path {
		g.serveResourceMetadata(w, r)
		return
	}
	http.NotFound(w, r)
}

// refuseUnread logs, records and answers the refusal e of a request whose
// messages were not read.
func (g *Gateway) refuseUnread(w http.ResponseWriter, r *http.Request, cid string, e *rpcError) {
	g.log.Warn("deny", "cid", cid, "method", r.Method, "outcome", e.contract, "reason", e.message)
	g.auditUnread(r, cid, e, g.now())
	g.writeError(w, e, nil, cid)
}

// serveNotPost serves the endpoint's other methods: a GET (the event
// stream, within the caller's Options.MaxStreams) or a DELETE (a session's
// end) is forwarded once its caller is authenticated; any other method is
// refused.
func (g *Gateway) serveNotPost(w http.ResponseWriter, r *http.Request, cid string) {
	switch r.Method {
	case http.MethodGet, http.MethodDelete:
		pr, aerr := g.authenticate(r)
		if aerr != nil {
			g.logRefusedCaller(cid, r.Method, aerr)
			g.auditUnread(r, cid, aerr, g.now())
			g.writeError(w, aerr, nil, cid)
			return
		}
		if e := g.discardBody(r); e != nil {
			g.refuseBody(w, r, pr, cid, e, g.now())
			return
		}
		// Its session is judged before its decision is logged, as a
		// POST's is: the log says deny, not allow and then deny
		// (roundTrip judges it again as it binds it, for the requests
		// that came between).
		if e, reason := g.checkSession(r, pr); e != nil {
			g.log.Warn("deny", "cid", cid, "subject", pr.Subject, "roles", strings.Join(pr.Roles, ","), "method", r.Method,
				"outcome", e.contract, "code", e.code, "reason", reason)
			g.auditRefusal(r, pr, cid, nil, e, e.message, g.now())
			g.writeError(w, e, nil, cid)
			return
		}
		if r.Method == http.MethodGet {
			g.serveStream(w, r, pr, cid, nil, nil)
			return
		}
		g.log.Info("allow", "cid", cid, "subject", pr.Subject, "roles", strings.Join(pr.Roles, ","), "method", r.Method)
		g.passThrough(w, r, nil, pr, cid, nil, nil, nil)
	default:
		e := errMethod(r.Method)
		g.log.Warn("deny", "cid", cid, "outcome", e.contract, "reason", e.message)
		g.auditUnread(r, cid, e, g.now())
		w.Header().Set("Allow", "GET, POST, DELETE")
		g.writeError(w, e, nil, cid)
	}
}

// discardBody reads and drops the body of a GET or a DELETE, which is not
// forwarded: it refuses one over MaxBodyBytes (413) or that could not be
// read (400). net/http watches an HTTP/1 connection for its client's
// leaving, which ends a GET stream, only once the request's body has been
// read to its end (as the answer's header is written, it reads a body of
// less than 256 KiB itself, but not a larger one): a GET with a body left
// unread held its stream, the downstream's connection and, at a go-sdk
// downstream, the session's one GET stream (another is refused, 409) for
// good once its client had gone.
func (g *Gateway) discardBody(r *http.Request) *rpcError {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	if r.ContentLength > g.maxBody {
		return errTooLarge(g.maxBody)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(r.Body, g.maxBody+1))
	switch {
	case n > g.maxBody:
		return errTooLarge(g.maxBody)
	case err != nil:
		return errInvalidRequest("body could not be read")
	}
	return nil
}

// refuseBody logs, records and answers the refusal e of the body of pr's
// request, which arrived at start: a POST's that could not be read
// ([Gateway.readBody]), a GET's or DELETE's read and dropped
// ([Gateway.discardBody]). Its caller is authenticated, so its line and
// its record name it.
func (g *Gateway) refuseBody(w http.ResponseWriter, r *http.Request, pr *policy.Principal, cid string, e *rpcError, start time.Time) {
	g.log.Warn("deny", "cid", cid, "subject", pr.Subject, "roles", strings.Join(pr.Roles, ","), "method", r.Method, "outcome", e.contract, "reason", e.message)
	g.audit(r.Context(), pr, cid, infoOf(r), "", "", nil, audit.PhaseOutcome, false, e.contract, e.message, 0, start)
	g.writeError(w, e, nil, cid)
}

// authenticate parses the Authorization header (RFC 6750 / 7235: the scheme
// is case-insensitive, the token is case-sensitive) and resolves it.
func (g *Gateway) authenticate(r *http.Request) (*policy.Principal, *rpcError) {
	pr, e := g.authenticateBearer(r)
	if e != nil && e.challenge != "" && g.resource != nil {
		e.challenge += g.resource.challenge
	}
	return pr, e
}

func (g *Gateway) authenticateBearer(r *http.Request) (*policy.Principal, *rpcError) {
	vals := r.Header["Authorization"]
	if len(vals) == 0 {
		if pr := g.inProcessPrincipal(r); pr != nil {
			return pr, nil // CheckPins's own listing
		}
		return nil, errUnauthenticated("missing bearer token", false)
	}
	if len(vals) > 1 {
		return nil, errUnauthenticated("more than one Authorization header", true)
	}
	v := strings.TrimLeft(vals[0], " \t")
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		// The Bearer scheme without a token (an empty variable in
		// "Bearer $TOKEN", its space trimmed as the header came) is not
		// another scheme, nor is one followed by a tab.
		scheme, _, tab := strings.Cut(v, "\t")
		switch {
		case !strings.EqualFold(scheme, "Bearer"):
			// Another authentication method: the challenge without an
			// error code (RFC 6750, section 3.1).
			return nil, errUnauthenticated("Authorization scheme must be Bearer", false)
		case tab:
			return nil, errUnauthenticated("malformed bearer token", true)
		}
	}
	tok = strings.Trim(tok, " \t")
	if tok == "" {
		return nil, errUnauthenticated("empty bearer token", true)
	}
	if !token.IsToken68(tok) {
		return nil, errUnauthenticated("malformed bearer token", true)
	}
	pr, ok, err := g.callAuthenticator(r.Context(), tok)
	if !ok {
		return nil, errAuthFailed()
	}
	if errors.Is(err, ErrAuthenticatorUnavailable) || errors.Is(err, token.ErrIntrospectionFailed) || errors.Is(err, token.ErrKeySetUnavailable) {
		g.log.Warn("the authenticator could not judge a token; answered as the upstream's failure, not 401", "err", err)
		return nil, errAuthUnavailable(errors.Is(err, context.DeadlineExceeded))
	}
	if err != nil || pr == nil || pr.Subject == "" {
		e := errUnauthenticated("invalid bearer token", true)
		e.why = refusedWhy(err)
		return nil, e
	}
	if err := token.CheckPrincipal(pr); err != nil {
		// The authenticator's fault, not the client's: say so in the log,
		// and send nothing on under an identity the headers would change.
		g.log.Error("gateway: the authenticator returned a principal that cannot be sent downstream; refused", "err", err)
		return nil, errUnauthenticated("invalid bearer token", true)
	}
	return pr, nil
}

// callAuthenticator asks the Authenticator about tok; ok is false when it
// panicked (its bug), logged with its stack: the request is refused
// INTERNAL, answered and recorded as Cost's and Transport's panics are,
// not left to net/http, which drops the connection unanswered.
func (g *Gateway) callAuthenticator(ctx context.Context, tok string) (pr *policy.Principal, ok bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v) // net/http's own way to break the connection
			}
			g.log.Error("gateway: the Authenticator panicked; the request was refused", "panic", logsafe.PanicText(v),
				"stack", string(debug.Stack()))
			pr, ok, err = nil, false, nil
		}
	}()
	pr, err = g.auth.Authenticate(ctx, tok)
	return pr, true, err
}

// refusedWhy is the reason an authenticator gave for refusing a token,
// for the log: the token package's own words (which never quote the
// token), "unknown token" for a table's miss; nothing for another
// authenticator's error, whose text may hold anything. err is nil when
// the authenticator returned no principal, or one without a subject.
func refusedWhy(err error) string {
	switch {
	case err == nil:
		return "the authenticator returned no principal, or one without a subject"
	case errors.Is(err, ErrUnknownToken):
		return "unknown token"
	case errors.Is(err, token.ErrInvalidJWT), errors.Is(err, token.ErrInvalidToken):
		return textsafe.Clean(err.Error(), 200)
	}
	return ""
}

// readBody reads at most g.maxBody bytes of r's body into a pooled buffer.
// A body declared in another charset than UTF-8, or encoded, is refused
// unread ([checkBodyCoding]).
func (g *Gateway) readBody(r *http.Request) (*bytes.Buffer, *rpcError) {
	if e := checkBodyCoding(r.Header); e != nil {
		return nil, e
	}
	if r.ContentLength > g.maxBody {
		return nil, errTooLarge(g.maxBody)
	}
	buf := g.bufs.Get().(*bytes.Buffer)
	buf.Reset()
	err := g.fill(buf, r.Body, r.ContentLength)
	if err == errBodyTooLarge || int64(buf.Len()) > g.maxBody {
		g.putBuf(buf)
		return nil, errTooLarge(g.maxBody)
	}
	if err != nil {
		g.putBuf(buf)
		return nil, errInvalidRequest("body could not be read")
	}
	return buf, nil
}

// fill reads body, a body of the declared length (or -1), into buf until
// its end, or until it has read more than g.maxBody bytes (errBodyTooLarge,
// or buf holds them). buf grows with what arrives, 64 KiB ahead (doubling
// past that), not to the declared length first, which a client could
// declare and never send; and never past the declared length (nor
// g.maxBody), so that a body costs its length, not up to twice it
// (bytes.Buffer.ReadFrom doubles a full buffer before it sees the end).
func (g *Gateway) fill(buf *bytes.Buffer, body io.Reader, declared int64) error {
	// A LimitedReader on the stack: io.LimitReader's would be allocated.
	src := io.LimitedReader{R: body, N: g.maxBody + 1}
	for {
		if buf.Available() == 0 {
			// Full: read a byte more before growing, as a body of its
			// declared length ends here.
			var one [1]byte
			k, err := src.Read(one[:])
			if k > 0 {
				if int64(buf.Len()) >= g.maxBody {
					return errBodyTooLarge // not grown to hold the byte
				}
				end := declared
				if int64(buf.Len()) >= end {
					end = g.maxBody // none declared, or more than declared
				}
				growExact(buf, int(min(int64(max(buf.Len(), 64<<10)), end-int64(buf.Len()))))
				buf.WriteByte(one[0])
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			continue
		}
		b := buf.AvailableBuffer()
		k, err := src.Read(b[:cap(b)])
		buf.Write(b[:k])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// errBodyTooLarge ends [Gateway.fill] at a body over MaxBodyBytes.
var errBodyTooLarge = errors.New("gateway: body over MaxBodyBytes")

// growExact makes room in b for n more bytes, and no more (b.Grow at least
// doubles its capacity).
func growExact(b *bytes.Buffer, n int) {
	if b.Available() >= n {
		return
	}
	p := make([]byte, b.Len(), b.Len()+n)
	copy(p, b.Bytes())
	*b = *bytes.NewBuffer(p)
}

func (g *Gateway) putBuf(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		g.bufs.Put(b)
	}
}

// ctxKey is the key of the principal in a request context.
type ctxKey struct{}

// PrincipalFromContext returns the principal the gateway authenticated, in
// the context of a request it forwards (seen by a custom Transport), or nil.
func PrincipalFromContext(ctx context.Context) *policy.Principal {
	pr, _ := ctx.Value(ctxKey{}).(*policy.Principal)
	return pr
}
