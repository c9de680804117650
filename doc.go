// Package mcpguard puts guard rails around a Model Context Protocol server
// built with the official Go SDK (github.com/modelcontextprotocol/go-sdk),
// so that it is safe to hand to an AI agent: every call runs as the real
// caller, tools a caller lacks the roles for are invisible, writes are off unless
// allowlisted, dangerous writes need a signed human confirmation, calls are
// capped, arguments and results are strictly validated, and every decision
// on a tool call is audited, refusals included (a refused request of
// another kind, a tools/list without credentials say, is logged).
//
// A [Guard] assembles the pipeline. One line protects every tool of a
// server, typed (mcp.AddTool) or raw (Server.AddTool), and filters
// tools/list per caller:
//
//	pol, _ := policy.New(policy.Config{
//		Tools: []policy.ToolRule{
//			{Name: "get_customer_record", Class: policy.Read},
//			{Name: "trigger_refund", Class: policy.Write},
//		},
//		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
//		WriteAllowlist: []string{"trigger_refund"},
//	})
//	g, _ := mcpguard.New(pol, mcpguard.FromEnv("MY_TOKEN", tokens), &mcpguard.Options{Audit: sink})
//	// A tool without a rule (and no Default rule) is a start-up error.
//	if err := g.Install(server); err != nil {
//		log.Fatal(err)
//	}
//
// At shutdown, stop taking calls (http.Server.Shutdown, say), then call
// [Guard.Wait] before closing the audit sink: a call may outlive the
// request that carried it, and its outcome record would meet a closed sink.
//
// # The pipeline
//
// For each tools/call, in this order: recover from panics; correlate (an id
// and a start time; the audit record is written on every way out, and
// names as its tool only a name a tool could have: one [policy.CheckName]
// refuses (a control or invisible character, white space at an end), or
// over 1024 bytes, is recorded in the detail, escaped and cut, as log lines
// show it too, and a Guard serves no tool so named; a call a guarded call's
// handler makes in-process, with its context, of another guarded tool
// records that call's correlation id as its parent_id, [audit.Event]'s
// ParentID);
// authenticate (an [Authenticator]: verified TokenInfo, HTTP headers, or the
// launching environment of a stdio server; never a default identity unless
// the server names one, as [FromGatewayHeaders]' anonymous principal; never
// tool arguments); resolve and authorize with the [policy] (hidden and
// unknown tools get byte-identical answers; write tools need the allowlist);
// validate the arguments strictly ([Validator]); ask for confirmation (not
// for a dry run; package confirm); apply rate, spend and in-flight limits (package
// limiter; a dry run spends nothing, but is refused as the real call
// would be when its cost would not fit in the spend caps now); answer
// dry-runs (package dryrun); record a durable write-ahead
// intent for writes (package audit; a sink that has not made it within
// [Options].WriteAheadTimeout, 10 s by default, refuses the write
// AUDIT_UNAVAILABLE); run the handler with the caller's
// [Identity] in its context, under its deadline ([Options].Timeout, which
// starts here; a call made in-process within another guarded call's
// handler keeps that call's deadline, and when it passed first, while the
// human was asked to confirm or before a write's handler was called, the
// call is refused UPSTREAM_UNAVAILABLE, retryable, its tool not run);
// validate its output (that it can be encoded,
// as UTF-8, with no content block nil, nested at most 512 levels deep;
// its size, capped by [Options].MaxOutputBytes at 4 MiB by default; then
// its structured content against the tool's output schema); audit the
// outcome.
//
// With [Guard.Install], the server's prompts and resources, and the methods
// it added with mcp.AddReceivingCustomMethod, are served to authenticated
// callers only, as their own; a result of theirs (a list too, and a custom
// method's) nested more than 512 levels deep (go-sdk v1.8.0's client
// closes its session on a message nested beyond 1000), that cannot be
// encoded, or not UTF-8 once encoded, is refused with a JSON-RPC error
// -32603, and a tool that could not be listed so is refused. The limits
// and the audit apply to tools only; the policy's roles decide, besides
// the tools a caller sees, who may read the UI resource a tool names
// (MCP Apps; see [Guard.Install]).
//
// # Chaining
//
// Each step is also a stand-alone [Middleware] ([Recover], [Authenticate],
// [Authorize], [ValidateArguments], [Confirm], [Limit], [DryRun],
// [WriteAhead], [ValidateOutput], [Audit]).
// [Chain] composes them with
// the first listed outermost: Chain(a, b, c)(h) == a(b(c(h))). [When]
// applies a middleware to some calls only. [Guard.Wrap] guards a single raw
// handler; [Guard.Install] guards a whole server, one per Guard: a
// second Install is an error, so a getServer that builds a server per
// session or request makes a Guard for each, from the same Options (see
// [Guard.Install]). [Guard.SetPolicy] replaces a Guard's policy while it
// serves; under Install, it sends tools/list_changed to each session whose
// caller may see other tools under the new policy, and
// resources/list_changed to each whose caller may see other resources (a
// tool's UI resource), and to no other.
//
// # Sessions over HTTP
//
// IMPORTANT: over stateful Streamable HTTP, bind every MCP session to the
// user who opened it. The guard authenticates each request on its own, so
// a call runs as its real caller whatever session it names; but go-sdk
// v1.8.0 serves anyone who presents a session's Mcp-Session-Id (learnt
// from a log, a proxy, a Referer) unless the request that opened the
// session carried a verified user (auth.TokenInfo with a UserID), and
// much of a session is not a call: its stream (GET, resumed with
// Last-Event-ID), with the notifications and questions the server sends
// its client; its DELETE; the cancellation of its calls; its per-session
// budget and audit session id; and the answers to the server's questions,
// which no one authenticates: on an unbound session anyone, with a token
// or without, can answer "accept" to the confirmation an older client's
// user is asked for (below). Bind sessions with [token.Table.BindSessions]
// around the handler (with [BearerTokens]), with [token.BindSessions] and
// a JWT's or an introspector's Verifier (with [Bearer]), or put the
// handler behind auth.RequireBearerToken (with [FromTokenInfo]): another
// user's requests
// on the session, and those without a valid token, then get 403 (one
// whose bearer token the binding's verifier refuses, 401 with
// WWW-Authenticate: Bearer error="invalid_token"). An
// [Authenticator] of other headers binds nothing; behind mcpguard's
// gateway ([FromGatewayHeaders]) the gateway binds the sessions itself.
// Serve stateless (StreamableHTTPOptions.Stateless) where no binding is
// possible. A session opened without a token stays bound to no one,
// whatever tokens its later requests carry. A guard that authenticates by
// bearer token a request that carries no verified user, on a session with an
// id (a binding missing, or one for other tokens: the table's in front of
// JWTs), logs a warning, once; a request that carries its verified user on
// a session opened without one is not warned of (but see below). As a last
// line, the guard
// does not ask an older client (protocol before 2026-07-28) to confirm by
// an elicitation inside a call that arrived over HTTP on a session with an
// id unless it saw that session opened (its initialize) by the call's
// verified user, or through the gateway for the call's subject: it refuses
// the call, CONFIRMATION_REQUIRED. So a call with a verified user on a
// session opened without one is refused; and only a guard installed on the
// server ([Guard.Install]) sees sessions opened: a handler [Guard.Wrap]
// guards, or a stand-alone [Confirm], on a server no guard is installed
// on, refuses every such call. The go-sdk's HTTP+SSE
// transport (mcp.NewSSEHandler) binds no session (anyone who has the
// session id, in the query of every URL its client posts to, posts on it),
// and its calls carry no headers: a call without headers in the context of
// an HTTP request is refused so too. Stream transports (stdio, in memory)
// have one client per session and are not affected; nor are clients on
// 2026-07-28 or later, whose answer comes in a call of theirs with a state
// bound to their subject.
//
// Replicas behind a load balancer serve stateless, or stick each session
// to one replica: a stateful session lives in the process that opened it,
// and another answers "session not found". Stateless, an older client
// (before 2026-07-28) has no session, so it is not asked to confirm (the
// refusal says the server keeps no session with it), and the go-sdk keeps
// no initialize for it: its records have no client_name. What replicas
// share: the limiter's store (redislimit), the Confirmer's keys and nonce
// store (confirm/redisnonce), the audit table; each sets its own policy
// ([Guard.SetPolicy]).
//
// # Errors
//
// A refusal is a [*DenialError] with a [Code] from the error contract; it
// unwraps to a sentinel (errors.Is(err, ErrForbidden)). By default a
// refusal is a tool-error result (isError true) whose structured content
// and text are
// {"error":{"code","message","retryable","retry_after_seconds"?,
// "correlation_id"?,"details"?}} (the correlation id is set by the Guard,
// by Confirm, Limit, DryRun and WriteAhead, and by the other stand-alone
// guards inside an [Audit] middleware, to the id of its record; a handler
// reads it with [CorrelationID]), so a model can read it and correct
// itself. retryable is never true for a write whose handler started and
// failed: it may have written (for a handler's own refusal, see below).
// With [Options.ProtocolErrors] it is a JSON-RPC error instead. A client
// of the TypeScript SDK (1.32) checks a tool error's structured content
// against the tool's output schema too, and throws -32602 in place of a
// refusal of a tool that has one (a typed tool's): with
// [Options.SchemaSafeErrors] (around a chain of stand-alone steps,
// [SchemaSafe]) the refusals of such tools carry the error in their text
// alone. The HTTP
// statuses are [Code.HTTPStatus]'s, which the gateway and an HTTP route of
// one's own answer with; an MCP server's answer over Streamable HTTP is
// HTTP 200 whatever the code, without Retry-After (retry_after_seconds is
// in the error's data), but for the go-sdk's own statuses on protocol
// 2026-07-28 (400 for a JSON-RPC error -32602, as an unknown or hidden
// tool's and INVALID_ARGUMENTS in protocol-error mode, 404 for -32601):
//
//	UNAUTHENTICATED                                  -32000  HTTP 401
//	FORBIDDEN, WRITE_NOT_ALLOWED, CONFIRMATION_REQUIRED  -32001  HTTP 403
//	TOOL_NOT_FOUND                                   -32602 (or Options.NotFoundCode)  404
//	INVALID_ARGUMENTS                                -32602  HTTP 400
//	RATE_/SPEND_/CONCURRENCY_LIMIT_EXCEEDED          -32029  HTTP 429 + Retry-After
//	INVALID_RESPONSE                                 -32603  HTTP 502
//	UPSTREAM_UNAVAILABLE                             -32003  HTTP 502/504
//	AUDIT_UNAVAILABLE                                -32603  HTTP 503
//	INTERNAL                                         -32603  HTTP 500
//
// The go-sdk v1.8.0 client reads a JSON-RPC error with code -32003 as its
// own "client is closing" error and reports it as mcp.ErrConnectionClosed,
// with the guard's message in the text (the session stays open): a go-sdk
// client that needs to tell UPSTREAM_UNAVAILABLE apart uses tool errors (the
// default) or matches the text. The code is the error contract's, shared
// with the gateway.
//
// On the client's side, [DenialOf] reads a refusal back from what
// mcp.ClientSession.CallTool returns, in either mode (and the gateway's own
// refusals, those the go-sdk client lets through; not a -32003's, whose
// data go-sdk v1.8.0 drops): its code, message, whether and when to retry,
// correlation id and details.
//
// TOOL_NOT_FOUND is always the go-sdk's own JSON-RPC error for an unknown
// tool, byte for byte, so a hidden tool cannot be probed; with
// [Guard.Install], a change to a hidden tool sends its caller no
// tools/list_changed notification either, and the UI resource a hidden tool
// names (MCP Apps) is to its caller a resource the server does not have:
// unlisted, its reads answered with the go-sdk's not-found error, and a
// subscribe, listen, unsubscribe or completion naming it answered as the
// server answers one naming a URI it lacks (see [Guard.Install]). A handler
// (raw or typed) that returns a [*DenialError], or a result carrying one (set
// with SetError, as [DenialError.Result] does), refuses the call with it: the
// answer has its code and message (a TOOL_NOT_FOUND is answered as an unknown
// tool, as above) and the call's correlation id, and the record shows the
// call refused with that code. Its handler ran, so the call keeps what the
// limits charged it. For a write it is not retryable (it may have written),
// unless its code says that the call was not carried out: a cap (RATE_,
// SPEND_, CONCURRENCY_LIMIT_EXCEEDED) or AUDIT_UNAVAILABLE, as mcpguard's own
// stand-alone steps refuse inside a guarded handler. One without a code is a
// failure of the handler's: INTERNAL, as below. A handler that returns (nil,
// nil) or a plain error never reaches the SDK as such: both become INTERNAL
// (the SDK would crash on the first and send code 0 with the error text for
// the second), except that an error wrapping context.DeadlineExceeded or
// [ErrUpstreamUnavailable] becomes UPSTREAM_UNAVAILABLE and a *jsonrpc.Error
// is passed on unchanged. So does the error of a typed tool ([mcp.AddTool]),
// which the go-sdk's wrapper puts in a tool-error result with SetError, and
// any result carrying an error set that way; an output the wrapper's
// validation refuses is INVALID_RESPONSE. The wrapper may refuse arguments
// the guard's own validation let through: it reads them with every number a
// float64, so it cannot read one beyond float64's range (the guard accepts
// numbers up to 1e400), and its validator checks multipleOf and the bounds in
// float64 (0.07 is no multiple of 0.01 there). Its refusal is known only by
// its text, which a handler's error may start with too, with a value the
// caller chose: the guard works the refusal out from the call's arguments and
// the tool's input schema as go-sdk v1.8.0 would, and only an error of
// exactly that text (and of the type errors.New makes) is taken for it:
// INVALID_ARGUMENTS, as below. Any other is the handler's (the handler of a
// raw tool of a server the guard is installed on, whose error is wholly the
// caller's text, can still pass for it; none of a typed tool's can, as the
// wrapper does not call it with such arguments). Arguments the schema accepts
// but the wrapper cannot decode into the tool's Go type are INVALID_ARGUMENTS
// when the guard can tell that the handler did not run: when at the field the
// decoder's *json.UnmarshalTypeError names the arguments hold a number that
// no Go integer type the tool's input schema stands for there can hold (1e30,
// or even 9223372036854775807, which the wrapper reads as a float64 first,
// for an int). Such a call is given back what the limits charged it, and its
// record says so (a write's intent record is followed by that outcome). The
// error's own type and field do not decide it: a handler's error may be of
// that type, about a field of that name, of a value that fits the tool's type
// but not the handler's. So a value the schema does not rule out for the Go
// type (1e300 for a float32, which "number" also stands for; a string that is
// no RFC 3339 time for a time.Time, which "string" also stands for) and a
// decoder error of another kind (a custom UnmarshalJSON's) are answered as
// the handler's error: INTERNAL. The guard reads the input schema as the
// go-sdk derives it from the Go type: one written by hand that says "integer"
// for a field of another type would let a handler's error about that field
// pass for a decode failure. Neither the wrapper's refusal nor its decode
// failure is looked for in the error of a handler [Guard.Wrap] protects: that
// is a raw handler, with no wrapper below it, and its error is its own. A
// tool that wants the model to read its error message returns a result with
// IsError and Content instead. The wrapper's float64 reading also changes an
// integer a float64 cannot hold exactly (beyond 2^53: 12345678901234567
// reaches an int64 field as 12345678901234568, another account than the one
// validated, limited and confirmed): where a tool's input schema says
// "integer", such an integer is refused INVALID_ARGUMENTS with the
// arguments' validation, before anything is decided on it (argument limits,
// confirmation), for every tool of a server the guard is installed on (it
// cannot tell a raw handler from the wrapper); not for a handler
// [Guard.Wrap] (or [Guard.AddTool]) protects, which gets the bytes as sent.
// (Where the schema reaches "integer" through a local $ref, allOf, anyOf or
// oneOf too.) A number where the schema says "number" reaches a typed
// handler as that float64 too, whatever its Go type (a json.Number field
// gets 12345678901234567 as 12345678901234568): a typed tool that must read
// numbers exactly takes them as strings or integers, or is a raw handler.
// The wrapper then fills in the input schema's defaults: the question that
// asks a human to confirm a call of such a tool shows the arguments with
// them filled in ("... (with the input schema's defaults filled in)"; a
// ToolOptions.Describe is given them for it), while argument limits, a
// Cost function and a dry run's preview see the arguments as sent.
//
// # Security
//
// Messages never contain credentials, argument values or stack traces; the
// caller's [Credential] prints as "[REDACTED]" everywhere. Token
// comparison is constant-time. Validation refuses type coercion ("10.0" or
// true for a number), unknown fields even where a schema forgot
// "additionalProperties": false, malformed formats, overlong strings,
// control characters, duplicate keys, and invalid UTF-8 or an escaped lone
// UTF-16 surrogate ("\ud800") in a string or key, which encoding/json reads
// as U+FFFD and a downstream in another language may not; it never loads
// a "$ref" from disk or network. Two keys of one object that differ only
// in letter case (under Unicode simple folding: "seats", "SEATS",
// "\u017feats"), '_' or '-' ("s_eats") are duplicates too, in every
// object: encoding/json gives a handler's struct field the value of
// either, whichever comes last, and so does encoding/json/v2's
// case-insensitive matching, which also ignores '_' and '-'; where a
// schema admits undeclared members, one that differs so from a declared
// property is refused. (A tool whose arguments hold case-sensitive names
// as keys, environment variables say, takes them as an array of name and
// value pairs.) Strict mode only ever refuses more than the schema as
// written: it is checked together with it. A number
// literal longer than 128 characters or with an exponent beyond ±400 is
// refused too, whichever validator runs: exact arithmetic on it would cost
// seconds. The guard fails closed: a missing identity, an unknown tool, a
// tool whose schema does not compile, or a write whose audit intent cannot
// be recorded is refused. ToolAnnotations.ReadOnlyHint is only
// cross-checked against the configured class; it is never trusted. A tool
// the policy hides from some caller cannot bind arguments to HTTP headers
// (x-mcp-header): the go-sdk checks those headers before the guard runs,
// and its answer would give the tool away (see [Guard.Install]). A request
// nested more than 1000 levels deep (arguments at about 996) never reaches
// the guard: go-sdk v1.8.0 cannot read it, and answers 400 over
// Streamable HTTP or, over a stream transport (stdio, in memory), closes
// that client's session, which hurts the sender alone.
package mcpguard
