package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/cliarg"
	"github.com/mcpguard/mcpguard/internal/jsondepth"
	"github.com/mcpguard/mcpguard/internal/loopback"
	"github.com/mcpguard/mcpguard/internal/streamstop"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxRESTBody bounds a REST request body.
const maxRESTBody = 1 << 20

// sessionName is what X-Session-Id may hold.
var sessionName = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// registryEntry is one line of the registry, as `tools`, GET /tools and the
// list_tools tool show it.
type registryEntry struct {
	Name        string  `json:"name"`
	ReadOnly    bool    `json:"read_only"`
	Enabled     bool    `json:"enabled"`
	CostUnits   float64 `json:"cost_units"`
	Description string  `json:"description"`
}

// registry returns the configured tools, sorted by name. Write tools are
// listed whether enabled or not, so a reviewer sees the whole surface.
func (c *config) registry() []registryEntry {
	out := make([]registryEntry, 0, len(c.Tools))
	for _, n := range c.toolNames() {
		t := c.Tools[n]
		out = append(out, registryEntry{
			Name: n, ReadOnly: *t.ReadOnly, Enabled: *t.ReadOnly || c.writeEnabled(n),
			CostUnits: t.CostUnits, Description: c.description(n),
		})
	}
	return out
}

// httpHandler serves the app over HTTP: MCP Streamable HTTP at /mcp
// (Authorization: Bearer per request; the MCP session is the limiter's
// session, bound to the user who opened it, who holds at most
// maxMCPSessionsPerSubject of them) and the REST endpoints GET
// /tools and POST /tools/{name}/call (Authorization: Bearer and
// X-Session-Id). Both reach the same server and so the same guard. A
// request for no route is a REST refusal (restNotFound); one for a route
// with another method keeps the ServeMux's 405 and Allow header.
func httpHandler(a *app, rest *restSessions, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	// BindSessions: a request with a valid token goes through the go-sdk's
	// auth.RequireBearerToken, so the session it opens is its user's and
	// another user's requests on it (calls, streams, DELETE) get 403
	// "session user mismatch" (401 invalid_token with a token that does
	// not verify); one without passes on to the guard, which refuses and
	// audits its calls.
	// newMCPSessions: each caller holds a bounded number of sessions (by
	// the TokenInfo the binding gives a valid token).
	mux.Handle("/mcp", a.ids.bindSessions(newMCPSessions(a.server).handler(mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return a.server },
		&mcp.StreamableHTTPOptions{Logger: log}))))
	mux.HandleFunc("GET /tools", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"tools": a.cfg().registry()})
	})
	mux.HandleFunc("POST /tools/{name}/call", func(w http.ResponseWriter, r *http.Request) {
		restCall(w, r, a, rest, log)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !routed(mux, r) {
			restNotFound(w, r, a)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// routed reports whether mux has a route for r's path, with r's method or
// another (the ServeMux answers the latter 405).
func routed(mux *http.ServeMux, r *http.Request) bool {
	if _, pattern := mux.Handler(r); pattern != "" {
		return true
	}
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		r2 := r.WithContext(r.Context())
		r2.Method = m
		if _, pattern := mux.Handler(r2); pattern != "" {
			return true
		}
	}
	return false
}

// restNotFound refuses a request for no route as TOOL_NOT_FOUND (404, the
// contract's only not-found code), in the guard's error shape with the
// correlation id of its outcome record, like every other REST refusal.
// The path is public knowledge (README), so a caller without a valid
// token gets the 404 too, not a 401; the record names the caller when the
// token is valid (and then the REST session of a valid X-Session-Id,
// restRecordSession), and no tool (the path is not echoed anywhere).
func restNotFound(w http.ResponseWriter, r *http.Request, a *app) {
	ctx := r.Context()
	req := restRequest(r.Header, "")
	if id, err := a.authn.Authenticate(ctx, req); err == nil && id != nil && id.Principal != nil {
		ctx = mcpguard.NewContext(ctx, id)
	}
	res, err := a.record(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, mcpguard.Deny(mcpguard.CodeToolNotFound, "no such endpoint: the REST API is GET /tools and POST /tools/{name}/call")
	})(ctx, req)
	if err != nil || res == nil {
		res = mcpguard.Deny(mcpguard.CodeInternal, "the call failed").Result()
	}
	writeErrorResult(w, r.Header, res)
}

// maxRESTArgsDepth bounds the nesting of a REST call's arguments, the
// arguments object being the first level. The go-sdk reads no JSON-RPC
// message nested deeper than 1000 levels, and the call on the caller's
// REST session adds two (the message and its params): deeper arguments
// would end that session, its server end failing to read the call, and
// every later call on it would fail. They are refused before, in the
// guard's words (the guard refuses arguments nested past 64 levels).
const maxRESTArgsDepth = 998

// badBody is the refusal of a REST body that is not {"arguments": {...}}.
func badBody() *mcpguard.DenialError {
	return mcpguard.Deny(mcpguard.CodeInvalidArguments, `body must be a JSON object {"arguments": {...}} of at most 1 MiB`)
}

// restArguments returns the arguments of a REST body, {"arguments":
// {...}}: {} for an empty or null body (or one of JSON's white space
// only: space, tab, CR, LF) or null arguments. It checks the
// body's shape only: one JSON value, an object whose one member is
// "arguments" (once, spelt so: not "ARGUMENTS", which encoding/json would
// take for it), an object or null, nested at most maxRESTArgsDepth levels.
// The arguments are the guard's to validate, as over MCP (their names,
// strings, numbers, text encoding, duplicate names): they are returned
// as sent.
func restArguments(raw []byte) (json.RawMessage, *mcpguard.DenialError) {
	// JSON's white space only: bytes.TrimSpace would also take off
	// Unicode's (a no-break space, a form feed), which JSON refuses.
	raw = bytes.Trim(raw, " \t\r\n")
	if len(raw) == 0 {
		return json.RawMessage("{}"), nil
	}
	if jsondepth.Of(raw) > maxRESTArgsDepth+1 {
		return nil, mcpguard.Deny(mcpguard.CodeInvalidArguments, "arguments are nested too deeply")
	}
	if !json.Valid(raw) {
		return nil, badBody()
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	switch tok, err := dec.Token(); {
	case err != nil:
		return nil, badBody()
	case tok == nil: // null
		return json.RawMessage("{}"), nil
	case tok != json.Delim('{'):
		return nil, badBody()
	}
	var args json.RawMessage
	for n := 0; dec.More(); n++ {
		if key, err := dec.Token(); err != nil || n > 0 || key != "arguments" {
			return nil, badBody()
		}
		if err := dec.Decode(&args); err != nil {
			return nil, badBody()
		}
	}
	switch {
	case len(args) == 0 || string(args) == "null":
		return json.RawMessage("{}"), nil
	case args[0] != '{':
		return nil, badBody()
	}
	return args, nil
}

// restCall handles POST /tools/{name}/call with {"arguments": {...}}. A
// caller without a valid token, a tool not in the registry, a missing or
// malformed X-Session-Id and a malformed body are refused before any
// session is opened, in that order, and audited like the guard's own
// refusals (restRefuse). A refusal has the status of its code; a tool's
// own error result is a 422 with its answer (writeToolError).
func restCall(w http.ResponseWriter, r *http.Request, a *app, rest *restSessions, log *slog.Logger) {
	tool := r.PathValue("name")
	// The body is read before the token, the tool and X-Session-Id are
	// checked (the order of the refusals is unchanged; /mcp too reads a
	// body before its token): the record of a refusal of a well-formed
	// body has the args_sha256 that the guard's record of the same call
	// over /mcp has (an unknown tool's, an unauthenticated caller's).
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRESTBody))
	var args json.RawMessage
	d := badBody()
	if err == nil {
		args, d = restArguments(raw)
	}
	if id, err := a.authn.Authenticate(r.Context(), restRequest(r.Header, tool)); err != nil || id == nil {
		writeErrorResult(w, r.Header, restRefuse(r.Context(), a, r.Header, tool, args, nil))
		return
	}
	// The registry is every tool of the server (checkRegistry), and the
	// example hides none from any caller (GET /tools lists them all): a
	// name outside it is unknown to the guard too. Refused here, it gets a
	// correlation id, which the go-sdk's unknown-tool error, the guard's
	// answer, cannot carry.
	if _, ok := a.cfg().Tools[tool]; !ok {
		writeErrorResult(w, r.Header, restRefuse(r.Context(), a, r.Header, tool, args, unknownTool(tool)))
		return
	}
	// One X-Session-Id, never two: with two, a proxy reading the last and
	// this server the first would disagree about the session charged.
	sids := r.Header.Values("X-Session-Id")
	if len(sids) != 1 || !sessionName.MatchString(sids[0]) {
		writeErrorResult(w, r.Header, restRefuse(r.Context(), a, r.Header, tool, args,
			mcpguard.Deny(mcpguard.CodeInvalidArguments, "one X-Session-Id header required: 1 to 128 letters, digits or ._:-")))
		return
	}
	sid := sids[0]
	if d != nil {
		writeErrorResult(w, r.Header, restRefuse(r.Context(), a, r.Header, tool, nil, d))
		return
	}
	res, err := rest.call(r.Context(), r.Header, sid, tool, args)
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we) && we.Code == mcpguard.CodeToolNotFound.JSONRPC():
		// The guard answers an unknown tool (and only that: its other
		// refusals are tool results) with the go-sdk's own JSON-RPC error,
		// after the registry check above only for a tool it refuses to
		// serve (none of the shipped ones). It has recorded the call under
		// a correlation id the error does not carry: the refusal gets a
		// record of its own, whose id it carries.
		writeErrorResult(w, r.Header, restRefuse(r.Context(), a, r.Header, tool, args, unknownTool(tool)))
	case err != nil && r.Context().Err() != nil:
		// The client went away (its timeout, a closed connection): no
		// failure of the server's, and no one to answer. The call goes
		// on in its session, which records its outcome.
		log.Info("ticket: REST client went away during its call", "tool", tool, "err", err)
	case err != nil:
		log.Error("ticket: REST call failed", "err", err)
		writeDenial(w, mcpguard.Deny(mcpguard.CodeInternal, "the call failed"))
	case res.IsError && guardError(res) == "":
		writeToolError(w, res)
	case res.IsError:
		writeErrorResult(w, r.Header, res)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"result": res.StructuredContent})
	}
}

// unknownTool is the refusal of a tool the server does not have, in the
// go-sdk's words.
func unknownTool(name string) *mcpguard.DenialError {
	return mcpguard.Deny(mcpguard.CodeToolNotFound, "unknown tool "+strconv.Quote(name))
}

// restRequest is the call a REST request stands for, as the authenticator
// and the audit record see it: the tool and the request's headers.
func restRequest(h http.Header, tool string) *mcp.CallToolRequest {
	return &mcp.CallToolRequest{
		Params: &mcp.CallToolParamsRaw{Name: tool},
		Extra:  &mcp.RequestExtra{Header: h},
	}
}

// restRefuse refuses a REST call before the guard with d (nil: the caller
// is not authenticated) through the app's stand-alone audit chain, and
// returns the refusal result: the guard's error shape, with the
// correlation id of its outcome record. The record names the caller when
// the token is valid, and then the REST session of a valid X-Session-Id
// (restRecordSession), and has the args_sha256 of args (nil: none, for a
// body that was not read or is refused), as the guard's record has.
func restRefuse(ctx context.Context, a *app, h http.Header, tool string, args json.RawMessage, d *mcpguard.DenialError) *mcp.CallToolResult {
	// The chain's Authenticate tells Audit the caller, for the record's
	// subject and roles.
	req := restRequest(h, tool)
	req.Params.Arguments = args
	res, err := a.refuse(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if d == nil {
			d = mcpguard.Deny(mcpguard.CodeUnauthenticated, "authentication required")
		}
		return nil, d
	})(ctx, req)
	if err != nil || res == nil {
		return mcpguard.Deny(mcpguard.CodeInternal, "the call failed").Result()
	}
	return res
}

// guardError returns the code of res when it is the guard's error result
// ({"error": {"code": ...}}), "" for another result (a tool's own).
func guardError(res *mcp.CallToolResult) mcpguard.Code {
	var body struct {
		Error struct {
			Code mcpguard.Code `json:"code"`
		} `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(raw, &body) != nil {
		return ""
	}
	return body.Error.Code
}

// toolErrorStatus is the HTTP status of a tool's own error result (isError,
// not the guard's refusal): the call was allowed, made and answered (its
// audit record is allowed, "tool reported an error"), and the answer is
// for the caller to read and act on, as an MCP client's model reads it: a
// client error, not a failure of the server (500 INTERNAL, which is the
// guard's answer to a handler that failed).
const toolErrorStatus = http.StatusUnprocessableEntity

// writeToolError writes a tool's own error result res: toolErrorStatus
// with {"result": <structured result>, "is_error": true, "message": <its
// text>}, what an MCP client is given.
func writeToolError(w http.ResponseWriter, res *mcp.CallToolResult) {
	var text []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text = append(text, t.Text)
		}
	}
	writeJSON(w, toolErrorStatus, map[string]any{
		"result": res.StructuredContent, "is_error": true, "message": strings.Join(text, "\n"),
	})
}

// writeErrorResult writes the guard's tool-error result with the HTTP
// status of its code, and Retry-After / WWW-Authenticate where they apply:
// a 401 to a request h with a bearer token says error="invalid_token" (RFC
// 6750), as /mcp's does (token.BindSessions), so that the client gets a
// new token (its own expired, say); one without gets the bare challenge.
func writeErrorResult(w http.ResponseWriter, h http.Header, res *mcp.CallToolResult) {
	var body struct {
		Error struct {
			Code              mcpguard.Code `json:"code"`
			RetryAfterSeconds float64       `json:"retry_after_seconds"`
		} `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(raw, &body) != nil || body.Error.Code == "" {
		writeDenial(w, mcpguard.Deny(mcpguard.CodeInternal, "the tool failed"))
		return
	}
	status := body.Error.Code.HTTPStatus()
	if body.Error.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(body.Error.RetryAfterSeconds))))
	}
	if status == http.StatusUnauthorized {
		challenge := `Bearer realm="ticket"`
		if _, ok := token.Bearer(h); ok {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(raw, '\n'))
}

// writeDenial writes d, refused before or outside the guard, in the
// guard's error shape.
func writeDenial(w http.ResponseWriter, d *mcpguard.DenialError) {
	writeErrorResult(w, nil, d.Result())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// checkLoopback refuses a non-loopback host unless allowRemote, and a
// host that is not a host name or an IP address (a port, which is --port;
// brackets, as a URL or a Host header has them; a zone after an IPv4
// address), which loopback.IsHost, reading a Host header, would take, and
// net.Listen refuse later.
func checkLoopback(host string, allowRemote bool) error {
	if _, err := netip.ParseAddr(host); err != nil && host != "" {
		switch {
		case strings.ContainsAny(host, "[]"):
			return fmt.Errorf("--host %s: give an IPv6 address without brackets (::1)", cliarg.Shown(host))
		case strings.Contains(host, ":"):
			return fmt.Errorf("--host %s: want a host name or IP address, without a port (give it as --port)", cliarg.Shown(host))
		case strings.Trim(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != "":
			return fmt.Errorf("--host %s: want a host name or IP address (letters, digits, '.', '-', '_')", cliarg.Shown(host))
		}
	}
	if loopback.IsHost(host) || allowRemote {
		return nil
	}
	return fmt.Errorf("--host %s is not a loopback address (add --allow-remote to insist; the dev token table would then be reachable from the network)", cliarg.Shown(host))
}

// crossSite reports whether r was sent by a web page of another origin than
// the server's own: a browser says so in Sec-Fetch-Site (cross-site,
// same-site) and, on every request but a plain GET or HEAD, in Origin (one
// that is not "http://" and r's Host, "null" included). A request with
// neither header (a client that is not a browser) or with Sec-Fetch-Site
// none (a URL typed in the address bar) is not.
func crossSite(r *http.Request) bool {
	switch site := r.Header.Values("Sec-Fetch-Site"); {
	case len(site) > 1:
		return true
	case len(site) == 1 && site[0] != "same-origin" && site[0] != "none":
		return true
	}
	switch origin := r.Header.Values("Origin"); len(origin) {
	case 0:
		return false
	case 1:
		return !strings.EqualFold(origin[0], "http://"+r.Host)
	}
	return true
}

// refuseCrossSite refuses with a plain-text 403, before h and so with no
// audit record, a request that a web page of another origin sent
// (crossSite). Such a page reaches a server on 127.0.0.1 under its own
// Host, which the DNS rebinding check lets through, and may send a POST
// without a preflight (text/plain) or a GET (an image): it cannot send a
// bearer token, but each request would still be served a refusal and
// recorded in the audit trail. The MCP Streamable HTTP transport asks
// servers to check Origin; the server sends no CORS headers, so no page
// of another origin could read an answer anyway.
func refuseCrossSite(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if crossSite(r) {
			http.Error(w, "forbidden: the request came from a web page of another origin", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// serveHTTP serves a on ln until ctx ends.
func serveHTTP(ctx context.Context, a *app, ln net.Listener, log *slog.Logger) error {
	rest := newRESTSessions(a.server, a.authn)
	stuck := false
	defer func() {
		if stuck {
			// Closing a REST session waits for its calls: one still
			// running after waitIdle (its downstream hung, its
			// cancellation ignored) would hold the shutdown for ever.
			go rest.Close()
			return
		}
		rest.Close()
	}()
	// The REST endpoints get the DNS rebinding protection that the
	// go-sdk gives /mcp: a web page of another name rebound to 127.0.0.1
	// must not call tools with a token it knows (the dev token table).
	// Every endpoint refuses a web page of another origin (refuseCrossSite).
	// Ended when the server stops (RegisterOnShutdown, below): the MCP
	// event streams, which every go-sdk client holds open.
	streams, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	h := loopback.Guard(refuseCrossSite(streamstop.Handler(streams, "/mcp", httpHandler(a, rest, log))))
	srv := &http.Server{
		// Counted with the MCP requests (a.running): the audit sinks
		// close after serveHTTP returns, so it waits for both (below).
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a.running.Add(1)
			defer a.running.Add(-1)
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		// A request must arrive, its body included, within
		// httpReadTimeout: without it, a client that stalled in a body
		// (/mcp reads it before any token is checked) held its
		// connection for ever. net/http lifts the deadline once the body
		// has been read, so it cuts no slow call or event stream.
		ReadTimeout: httpReadTimeout,
		// A keep-alive connection left idle is closed: without it, idle
		// connections (GET /tools needs no token) held memory and
		// descriptors for ever.
		IdleTimeout: httpIdleTimeout,
	}
	srv.RegisterOnShutdown(endStreams)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			// Requests still under way (a slow call, an event stream):
			// close their connections, which ends the streams.
			_ = srv.Close()
		}
		err := <-errc
		// The calls go on in their MCP sessions, whose client may be
		// gone (a write runs to completion anyway).
		stuck = !a.waitIdle(log)
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// shutdownGrace is how long serveHTTP lets requests end on their own at
// shutdown before it closes their connections.
var shutdownGrace = 5 * time.Second

// httpReadTimeout is how long serve-http waits for a request to arrive,
// its body included (its headers: at most 10 s); a client still sending
// then has its connection closed.
var httpReadTimeout = 30 * time.Second

// httpIdleTimeout is how long serve-http keeps a connection open with no
// request on it.
var httpIdleTimeout = 2 * time.Minute
