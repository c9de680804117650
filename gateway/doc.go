// Package gateway puts mcpguard's policy in front of MCP servers written in
// any language: a [Gateway] is an http.Handler, a reverse proxy in front of
// one downstream MCP Streamable HTTP endpoint.
//
// For every request it turns the bearer token into a principal through an
// [Authenticator] (a static [TokenStore] from MCP_GATEWAY_TOKENS, see
// [TokensFromEnv]), parses the JSON-RPC envelope strictly, and authorizes
// each tools/call with a policy (by default [DefaultPolicy]: admin_* needs
// the role admin, one row of data). A refused call is answered by the
// gateway and never reaches the downstream. The gateway cannot ask a human:
// a call whose rule asks for a confirmation (policy.ToolRule.Confirm) is
// refused (CONFIRMATION_REQUIRED), never forwarded without one.
//
// Only tools/call is judged by the policy. Every other request (initialize,
// server/discover, ping, tools/list, which Options.FilterToolsList and
// Options.Pins filter, prompts/*, resources/*, completion/complete,
// logging/setLevel, subscriptions/listen, tasks/*, and methods the gateway
// does not know), every notification and every client response is
// forwarded to any authenticated caller (a subscriptions/listen only
// within Options.MaxStreams), for the downstream to decide with
// [HeaderSubject] and [HeaderRole] (which it can trust only where nothing
// but the gateway reaches it, or where it checks the gateway's signature:
// Options.Signer, [token.GatewaySigner.Verify]): whose a task is (tasks/get,
// tasks/result, tasks/list, tasks/cancel), or which prompts and resources a
// role may read. A tools/call that asks for a task ("task" in its params)
// is judged as any tools/call; its in-flight place (Options.Limiter) is
// given back, and its outcome recorded, when the downstream answers with
// the task it created, not when the task ends.
//
// # Forwarding
//
//   - A request allowed whole is forwarded byte for byte and the answer,
//     JSON or an event stream, relayed as it arrives (an event stream is
//     flushed event by event). An answer the downstream cuts short once
//     the gateway began relaying it (its connection broken, a bad chunk,
//     a silence past Timeout, an event stream ended inside a line, which
//     a body delimited by the connection's close shows no other way) is
//     cut short for the client too: the gateway breaks the client's
//     connection (http.ErrAbortHandler) rather than end the answer
//     cleanly, so that the client reads an error, not a complete answer
//     (a go-sdk client that reads a clean end after a cut line fails its
//     whole session); a batch member whose response was not read is
//     answered with an error, as on its other failures. An answer the
//     downstream sent before it read the whole request body (a 413 for a
//     body over its own limit) is relayed, also when it then stopped
//     reading and the rest of the body could not be written. The answer
//     is the downstream's, with the ids it wrote: only a batch's member
//     answers are given their member's id (below), for there an answer
//     with another id could take the place of another member's.
//   - The gateway's own client does not send a request on a pooled
//     connection idle for 90 s, or for the downstream's Keep-Alive timeout
//     less a second when that is shorter (the last one it announced), which
//     the downstream may be closing: a tools/call is never sent twice (see
//     Options.Transport).
//   - To an https downstream the gateway's own client speaks TLS (1.2 or
//     later unless Options.TLSConfig allows less) with Options.TLSConfig:
//     a private CA's roots, a client certificate for a downstream that
//     only the gateway may reach (mutual TLS). A failed handshake, or a
//     new connection the downstream closes unanswered (a client
//     certificate it refuses), fails the call with -32003 (502), logged
//     with "TLS".
//   - A batch is authorized member by member. Allowed members are sent as
//     separate requests, concurrently but at most 16 of one batch at a
//     time, each until its answer has been read, with the same session
//     headers (the go-sdk refuses batches from protocol 2025-06-18 on); the
//     answers are merged into one JSON array in the client's order, or,
//     when the client accepts an event stream and the downstream answers
//     with one, relayed as one merged stream as they arrive. A member
//     that is a request with an id gets exactly one answer, with its own
//     id byte for byte (the go-sdk answers id 1.5 with 1): the first
//     response the downstream sent it, its id set to the member's and the
//     rest unchanged (but a filtered listing), in an event named message
//     (an event named otherwise, which the go-sdk, TypeScript and Python
//     SDKs skip, is no message: neither relayed nor taken for the answer,
//     but a name some client reads as message once trimmed, as the go-sdk
//     does, "message " say, is one); further responses, an
//     array of responses, and data a client cannot read as one message
//     are dropped and logged ("upstream answers dropped"), and a member
//     sent no response is answered -32003. The downstream's requests and
//     notifications in a member's event stream are relayed unchanged to
//     a client that accepts a stream (but a line other than a data field
//     that some client splits in two is dropped, as with Pins below); a
//     notification, or a client's response, is answered nothing, whatever
//     the downstream sends. The answers held at once (read and not yet
//     written to the client; for a JSON array, all of them) are bounded
//     at 64 MiB in all, as one JSON
//     answer is: a member whose answer would pass that is answered with
//     an upstream error (-32003), and logged. A batch of more than 256
//     messages is refused whole (-32600).
//   - Notifications are honoured: a refused notification gets 204 and no body.
//   - A POST forwarded downstream (but a subscriptions/listen, below) is
//     not cancelled when its client hangs up: the downstream may go on
//     with the call (a guarded write runs to completion), so its answer is
//     still read to the end, and only then is the call's in-flight place
//     given back and its outcome recorded (what the downstream answered,
//     with the detail that the client went away or its connection was
//     closed). Once the client has gone, the
//     answer is read for at most Timeout after the client was last seen:
//     one that never ends is cut as on a timeout. A call not yet sent when
//     its client goes (the rest of a batch) is not sent, and is given back
//     its limiter charge; so is one whose request's deadline (an
//     embedder's middleware's, an http.TimeoutHandler's) has passed, and
//     it is answered -32003 (with 504 alone, as a GET or DELETE that
//     deadline ended is), for the client may be waiting still. A GET
//     stream ends with its client, and so does the event stream answering
//     a subscriptions/listen request (protocol 2026-07-28's stream of
//     change notifications, which runs nothing downstream and stays open,
//     silent until something changes): neither is bounded by Timeout once
//     its header has come. Either is authenticated again before each
//     write to its client, and ends once its token is refused (revoked:
//     as the Authenticator's cache allows; expired) or stands for another
//     principal (its roles changed): the client's request to resume it is
//     decided anew; an Authenticator that cannot judge the token now
//     ([ErrAuthenticatorUnavailable]) leaves it open. (A POST's answer, a
//     call in flight, ends under the token it was sent with.) So a client
//     that resumes a POST's event stream (Last-Event-ID) while the gateway
//     still reads it is refused by a go-sdk downstream (409 Conflict: the
//     stream has a reader) until that read ends, with the answer or at
//     most Timeout after the client went; it may resume then, the events
//     it missed replayed from the downstream's event store. A principal
//     holds at most Options.MaxStreams (32 by default) GET and
//     subscriptions/listen streams open at once, each from when it is sent
//     downstream until it ends: one more is refused (-32029, 429,
//     CONCURRENCY_LIMIT_EXCEEDED), never forwarded; a GET that reconnects
//     a stream is answered instead with an event stream that ends at once
//     and asks the client to reconnect in 5 s (see Options.MaxStreams).
//     At a server's shutdown, [Gateway.EndStreams] (registered with
//     http.Server.RegisterOnShutdown) ends every stream, cleanly, so that
//     Shutdown waits for the calls under way and not for the streams,
//     which every go-sdk client holds open.
//   - A client that stops reading its answer counts as gone: a write to
//     it that has not completed within Timeout (written in pieces of at
//     most 32 KiB, so a client that reads slowly is not cut) breaks its
//     connection (a write deadline in the past, set through
//     http.ResponseController: a middleware's ResponseWriter must have an
//     Unwrap method), and the answer is then read as for a client that
//     hung up, for up to Timeout more (the client was there while the
//     write waited). Otherwise it would hold the handler, the answer read
//     so far (up to 64 MiB with Pins or FilterToolsList, or for a batch),
//     the call's in-flight place and the downstream's connection for as
//     long as it kept its own open. A batch member's call keeps its
//     in-flight place, and its outcome record waits, until its answer
//     has been written (or that write failed). The gateway's own answers
//     (refusals, upstream errors, the health check) are written so too
//     when larger than 2 KiB: they echo the request's id, which the client
//     chooses, and may be as large as the body; a smaller one is buffered
//     by net/http and written once the handler has returned. Over HTTP/2
//     the guard resets the stream, which ends a client's stall by flow
//     control; a client that stops reading its whole connection also
//     stops the reset, so set the server's HTTP2.WriteByteTimeout
//     (http.HTTP2Config) when serving HTTP/2.
//   - A downstream's redirect (3xx) is never relayed: the client would
//     follow it to wherever it points (a downstream that redirects /mcp to
//     /mcp/ names its own address) and send its requests there, judged by
//     no one. It is a 502 (a batch member's, an upstream error answering
//     the member), logged with where it pointed.
//   - With Options.FilterToolsList, tools/list results lose the tools the
//     caller may not call, also inside event streams. Not their UI
//     resources (an MCP App's _meta.ui.resourceUri): resources/* are the
//     downstream's to decide, and one guarded by mcpguard (Guard.Install,
//     with mcpguard.FromGatewayHeaders) hides a hidden tool's.
//   - With Options.Pins, tools/list results keep only the tools whose
//     definitions were approved, and initialize results only the
//     instructions approved ([Pins]: at their first listing, or a
//     fixed set), so a downstream that changes a tool's description,
//     schemas or annotations after approval (a "rug pull") cannot put new
//     instructions before the model: the changed tool is withheld, its
//     calls are refused (-32001, 403), and the change is logged and
//     recorded (TOOL_CHANGED, or TOOL_NOT_PINNED for a tool a fixed set
//     does not name). [Gateway.CheckPins] lists the downstream's tools
//     once, in process, so that the pins judge them before the first
//     call. Every other answer is read too, GET streams
//     included: a client takes a response for the request its id names,
//     on whatever stream it comes, and a listing found there is checked
//     alike; an event that is not JSON is dropped (one of empty data, no
//     message, is relayed: a priming event's id; so is one named other
//     than message, which clients skip, without its data, which is not
//     checked, as with FilterToolsList), a 2xx JSON answer that
//     is not JSON (or over 64 MiB) is a 502 (the answer to a notification
//     or a client's response, which no client reads, is relayed without
//     its body; a DELETE's answer is relayed as it is).
//     An answer the gateway must read (with Pins, or a tools/list with
//     FilterToolsList) is a 502 when compressed (Content-Encoding; the
//     gateway asks for identity) or, for an event stream, in another
//     charset than UTF-8: its client would inflate or decode it into other
//     messages than the gateway checked. In such an event stream, a line
//     other than a data field that has a character some client ends a line
//     at (httpx, under the Python SDK, splits at U+2028, NEL, VT and the
//     like) is dropped. A listing whose result, tools
//     or a tool's name are named twice, or under another spelling that a
//     client decoding with encoding/json, or with encoding/json/v2 matching
//     names case-insensitively, takes for them ("Result", "Tools", "NAME";
//     "re_sult", "to-ols", "na_me"), is refused or withheld the same way.
//   - Client headers in the x-mcp-gateway-* namespace are dropped, and so
//     is every client header whose name has an underscore (as nginx does
//     by default): servers that map "_" to "-" (CGI, WSGI) would read
//     X_Mcp_Gateway_Role, Mcp_Session_Id or Content_Encoding as the header
//     the gateway set or checked. The gateway sets [HeaderSubject],
//     [HeaderRole] and [HeaderRequestID] (and, with Options.Signer,
//     [token.HeaderSignature], which signs them). Hop-by-hop headers are
//     dropped both ways (but for the headers a downstream's answer lists
//     in a Connection header that also says close: net/http's reader
//     drops that Connection header, and with it their names), the
//     Authorization header is not forwarded, nor is Expect (the gateway has
//     read the whole body), nor are Origin and Sec-Fetch-Site (the gateway
//     judged them: see Web pages), nor are Forwarded, X-Forwarded-For,
//     X-Forwarded-Host and X-Forwarded-Proto, Accept-Encoding is sent as
//     identity, and the downstream gets its own Host.
//     Mcp-Session-Id and Mcp-Protocol-Version pass through.
//   - Header values are read once: spaces and tabs around a value (which
//     RFC 9110 excludes from it; an HTTP/2 client can send them) are
//     dropped as the request arrives, before any check, and the values the
//     gateway checked are forwarded verbatim. The gateway's own client
//     never trims or rewrites a value: one it cannot send as it is (a
//     control character, outer spaces) fails the request (502) instead. In
//     a batch sent with Mcp-Method, a member whose method or tool name
//     cannot be sent as its Mcp-Method or Mcp-Name header is refused
//     (-32600 or -32602).
//   - An Mcp-Session-Id that is not 1 to 256 visible ASCII characters
//     (0x21 to 0x7E, as the MCP specification requires) is refused with
//     400 before any session check, on POST, GET and DELETE alike.
//   - Each downstream session is bound to the principal that opened it:
//     another principal presenting that Mcp-Session-Id gets 404 and is
//     never forwarded, so a valid token of one's own does not buy a ride on
//     someone else's session. Ids are compared without regard to ASCII
//     case ("ABC" and "abc" are one session to the gateway), as a
//     downstream keeping its sessions under a case-insensitive collation
//     reads them. A binding is confirmed by the downstream (its
//     2xx answer naming the id, as to initialize, or to a request carrying
//     it); an id the gateway has not seen (a session opened before a
//     restart) is held for the principal whose request carrying it is sent
//     downstream, for as long as any of that principal's requests carrying
//     it is downstream, and dropped when the last is answered unless one
//     answer was a 2xx. A request the gateway refuses itself holds nothing,
//     and of two principals' concurrent first uses only the first is
//     forwarded. Ids a client makes up never displace a confirmed binding,
//     nor a hold: up to 4,096 ids are held at once, 256 per principal, and
//     past that a request on an unseen id is refused (404). The gateway
//     keeps up to 1,024 confirmed bindings per principal, so that one
//     principal cannot lock the others out, and 65,536 in all: a
//     principal's new session past its share takes the place of its own
//     oldest one; in a full table, of the oldest one of the principal
//     holding the most, when that one holds at least two more, else of its
//     own oldest. So principals who filled the table cannot lock a newcomer
//     out; only when every binding is its principal's only one is a
//     principal holding none refused (404) until room is made. A displaced
//     session may still be live downstream, so its id keeps a tombstone:
//     only the principal that held it may use it again. So does a session
//     the downstream opens for a principal holding none in such a table
//     (its initialize carries no id and is forwarded): it is not bound, and
//     only that principal may use it once room is made. Tombstones are
//     bounded alike (1,024 per principal, 65,536 in all, the oldest dropped
//     first, which leaves its id bound to no one). A DELETE that ends the
//     session unbinds it and leaves no tombstone. Known limit: bindings do
//     not expire when a session goes idle, so a session abandoned without a
//     DELETE keeps its binding until it is displaced. This is deliberate:
//     the gateway cannot tell when its downstream drops a session (the
//     go-sdk keeps one for ever unless its SessionTimeout is set, and
//     counts only POSTs as use), and a binding that expired while its
//     session lived would let another principal who learnt the id use it.
//
// # Web pages
//
// A request to the MCP path whose Origin header is neither its own nor in
// Options.AllowedOrigins, or that came to a loopback address under another
// name (DNS rebinding; see Options.DisableLocalhostProtection), is refused
// with -32001 and 403 before its token is read. A listed origin gets CORS
// (a preflight answered without a token, its answers readable by its
// pages). The gateway sends its downstream neither Origin nor
// Sec-Fetch-Site, as it sends it its own Host: a downstream that checks
// them, as the MCP transport asks servers to, would refuse every page the
// gateway lets through.
//
// # Fail closed
//
// Anything the gateway cannot decide is refused locally: a body that is not
// UTF-8 JSON (-32700), not an object or non-empty array of at most 256
// messages, a missing or wrong jsonrpc, a non-string method, one with a
// control or invisible character or white space at an end (-32600),
// non-object params, a tools/call without a non-empty string name, or
// whose name has a control or invisible character or white space at an end
// (-32602; policy.CheckName): a downstream that trimmed it would run a
// tool the policy did not judge (or, for "tools/call ", a call the policy
// never saw). So is a tools/call whose arguments hold an escaped lone
// UTF-16 surrogate ("\ud800", -32602, as the library's pipeline refuses
// it): the gateway reads U+FFFD where a downstream in JavaScript or Python
// keeps the surrogate. The policy's rules apply to names under case folding too
// ("ADMIN_reset_key" needs the role of "admin_*"; see
// policy.Policy.Resolve). Member names that occur twice, or differ from
// jsonrpc, id, method, params, name or arguments only in case, by '_' or
// '-' ("me_thod", "_params") or by what follows a NUL ("name\u0000x"), are
// refused too: decoders disagree about them (encoding/json matches names
// case-insensitively, encoding/json/v2's case-insensitive matching ignores
// '_' and '-' as well, the go-sdk does neither, a C reader such as cJSON
// cuts a name at a NUL), and a gateway that reads another value than its
// downstream is a bypass: a client's response holding "me_thod" and
// "para-ms" was forwarded unjudged, and read as a tools/call. Argument-aware
// rules (policy.ArgLimit) read arguments with the same strictness: two
// argument names equal under Unicode case folding once '_' and '-' are
// dropped ("amount" and "A_MOUNT"), each cut at a NUL, make every argument
// unreadable (encoding/json/v2 with jsontext.AllowDuplicateNames takes the
// last of them).
// A POST body is judged as the bytes sent, read as UTF-8, so one that a
// downstream could read otherwise is refused with 415 before it is read: a
// Content-Encoding other than identity (Express's express.json() inflates
// bodies), or a Content-Type naming a charset other than UTF-8, naming one
// in a form the gateway cannot read, or naming one twice (the TypeScript SDK
// decodes a body in the charset named: in UTF-7, a string argument can close
// itself and name another tool).
//
// # Errors
//
// A single refusal carries a semantic HTTP status as well as the JSON-RPC
// error: -32000 with 401 and WWW-Authenticate, -32001 with 403, -32601
// with 404 for a tool the policy has no rule for (or hides: a policy
// without ShowForbidden; with 400 when the request names a session, as a
// 404 there tells the client its session has ended, and a client that
// follows the MCP transport, as mcp-go does, starts a new one), -32602 /
// -32600 / -32700 with 400 (-32600 with 413 for a body over MaxBodyBytes,
// 415 for one encoded or in another charset, 405 with Allow for an HTTP
// method other than GET, POST and DELETE, or OPTIONS as a CORS preflight),
// -32029 with 429 and Retry-After (limiter, or a GET or
// subscriptions/listen stream past Options.MaxStreams, but for a GET that
// reconnects a stream: see Options.MaxStreams; with 503 and a
// Retry-After of 1 s when the limiter's store failed: "Limiter
// unavailable"), -32003 with 502, or
// 504 on a timeout or a request's passed deadline (also when the
// authenticator could not judge the token: see
// [ErrAuthenticatorUnavailable]). The token is checked before a POST's
// body is read: a 401 (or an authenticator's 502 or 504) carries the id of
// a request whose body is at most 64 KiB (and MaxBodyBytes) long, neither
// encoded nor in another charset; of any other body at most 64 KiB is read
// (a null id, and an HTTP/1 connection closed after the answer; an HTTP/2
// stream is reset, its connection kept), so a caller without a token
// cannot make the gateway hold MaxBodyBytes of a body.
// Batches are answered with 200. Messages
// never contain tokens or arguments; every error's data carries the error-contract code
// (INVALID_REQUEST, the gateway's own, for a body or envelope it cannot
// read: -32700 and -32600) and the request's correlation id. A refusal
// for the caller's roles (-32001, FORBIDDEN) names the tool, the caller's
// roles and the roles the tool requires: required_roles, any one of which
// would do, or, when several role rules apply to the tool,
// required_role_sets, a role of each of which is needed (the caller may
// meet some of them already); a refusal for an argument (an argument
// limit), which comes once the roles are met, names none. A call whose
// cost Options.Cost could not give, or whose custom Transport's RoundTrip
// panicked, fails with -32603 and
// 500 (INTERNAL). A go-sdk client (v1.8.0) reads the JSON-RPC error of
// a refusal with 400, 401, 403 or 404, but takes 429, 500, 502, 503 and 504
// for transient failures of its transport: it reports the status text alone
// ("rejected by transport: ... Bad Gateway", its own code -32005), without
// the gateway's code, message or retry_after_seconds (the gateway's log and
// records have them). Options.TransientStatusOK answers those refusals 200
// instead, the JSON-RPC error unchanged: the go-sdk client then reports a
// cap's -32029 with its data, and -32003 as mcp.ErrConnectionClosed (its
// own code for a closing client) with the gateway's message in the text.
//
// # Discovery
//
// With Options.ResourceMetadata the gateway is an OAuth 2.0 protected
// resource as the MCP authorization specification asks (RFC 9728): it
// serves the metadata at its well-known URI without a token, and every 401
// challenge names that URI (resource_metadata) and the scopes, so that an
// MCP client can find the authorization server that issues its tokens.
//
// # Logs and audit
//
// Each decision is logged (correlation id, principal, method, tool,
// outcome, and a refusal's message as its reason; never arguments or
// tokens: a request refused for its session
// gets a line for each of its messages, and a tool or instructions
// withheld by the pins name the principal whose answer lost them) and,
// with Options.Audit, recorded as an audit.Event with the session id and
// protocol version (each left empty when the header's value is not one):
// one outcome for every tools/call (without its tool when its params
// cannot be read), and one
// without a tool for a refused request that carries none: one refused
// before its messages could be read (its Origin; its HTTP method; without
// a valid token, a POST whose body the gateway does not read, whatever it
// holds: over 64 KiB, encoded, in another charset or unreadable; once its
// caller is authenticated, whom its record names, a POST body encoded or
// in another charset, too large, unreadable, not JSON, or not an object or
// a non-empty array of at most 256 messages, or a GET's or DELETE's body,
// read and dropped, too large or unreadable), or for its credentials or
// its session (an unauthenticated initialize or GET, a DELETE of another's
// session), or for its caller's open streams (a GET or
// subscriptions/listen past Options.MaxStreams). A tools/call refused
// for its name's characters (policy.CheckName) has no tool in its record: the detail
// names it, quoted and escaped as strconv.QuoteToASCII writes it
// ("admin_reset_key\u200b"), cut after 128 bytes with "..." (an HTTP
// method refused is shown so too). A write-class
// tool gets a durable write-ahead intent first; if it cannot be made
// within Options.Timeout, the call is refused with -32603 and 503 and not
// forwarded. A record's
// correlation id is the one sent downstream in [HeaderRequestID]: a
// downstream guarded by mcpguard with Options.RequestIDHeader set to it
// records it as its records' request_id, and the two trails join on it.
//
// A forwarded tools/call's outcome is allowed, with Code "", when the
// downstream's answer was relayed (for a batch member, its JSON-RPC
// response), whatever the answer says; it is UPSTREAM_UNAVAILABLE, not
// allowed, when the gateway answered -32003 instead (no answer, a timeout,
// a redirect, an answer it must read but cannot, a batch member's answer
// without a JSON-RPC response), cut the relayed answer short, or did not
// send the call, its client gone. Its Detail says what the gateway saw of
// the answer: "downstream answered HTTP 503" for a status other than 2xx (a
// single call's answer is relayed so, whatever its body), and, where the
// gateway reads the answer anyway (a batch member's; with Pins, every 2xx
// one), "downstream answered a JSON-RPC error" ("downstream answered HTTP
// 500 with a JSON-RPC error") or "tool reported an error" for a result with
// isError true, as the library's guard records a tool error. Only the
// call's own response tells these, the one its client takes: the first with
// the call's id (a batch member's, the one relayed as its answer), not
// another request's response, a server's request or notification in the
// stream, or a second response. A single call's answer relayed without Pins
// is not parsed: a 2xx holding a JSON-RPC error or a tool error has the
// detail a success has (none but audit.DetailFailOpen for a call the
// Limiter admitted because its store failed, and a next round's words: see
// Options.Limiter); the downstream's own records (mcpguard's guard:
// joined on the correlation id) tell them apart. A call without an answer,
// or whose answer was cut short, says why, in a fixed phrase that holds
// nothing of the error's text (the downstream's address, its bytes: the log
// line has them): "downstream refused the connection", "downstream timed
// out after 30s" (the gateway's Timeout; a dial's or a custom Transport's
// own timeout says "downstream timed out (the Transport's own timeout, or
// the dial's)"), "downstream reset the connection", "downstream closed the
// connection before answering" (or "before the answer's end"), "downstream
// answered malformed HTTP", "downstream's TLS certificate was refused",
// "downstream's answer had no JSON-RPC response" (a 2xx's: another status
// says it by itself; with Pins, a single call's JSON answer relayed that
// holds none, as an empty body, a notification or another request's
// response, is allowed and says so too; an event stream relayed whole
// that holds none, as a server that has its client poll (SEP-1699) ends it,
// says "downstream ended the call's event stream without its JSON-RPC
// response (...)"), and so on, or "the request to the
// downstream failed (the log says why)" for an error of a custom Transport
// it cannot tell; a Transport that panicked says "the Transport panicked"
// (INTERNAL when its RoundTrip did, UPSTREAM_UNAVAILABLE when its answer's
// body did). A call refused as the authenticator could not judge its token
// (UPSTREAM_UNAVAILABLE too) says "Authorization server unavailable: the
// token could not be checked" (or "timed out"), but "not forwarded: the
// client went away (the request's context ended) before its token was
// checked" when the request's context had ended by then, or its deadline
// passed. A client gone (above) is told after these, joined with "; " (a
// timeout after it went away is not: the gateway ends such a call one
// timeout after its client was last seen).
package gateway
