package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/cliarg"
	"github.com/mcpguard/mcpguard/internal/jsondepth"
	"github.com/mcpguard/mcpguard/internal/loopback"
	"github.com/mcpguard/mcpguard/internal/textsafe"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The headers the gateway sets on forwarded requests (and strips from its
// clients', so they cannot be forged through it).
const (
	headerSubject   = token.HeaderSubject
	headerRole      = token.HeaderRole
	headerRequestID = token.HeaderRequestID
)

// maxRecorded bounds what /_received and admin_list_audit_log remember.
const maxRecorded = 1000

// ring is a bounded, concurrency-safe list of the most recent items:
// once full, an item added takes the place of the oldest, in constant time.
type ring[T any] struct {
	mu    sync.Mutex
	items []T // at most maxRecorded; once full, items[next] is the oldest
	next  int
}

func (r *ring[T]) add(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.items) < maxRecorded {
		r.items = append(r.items, v)
		return
	}
	r.items[r.next] = v
	r.next = (r.next + 1) % maxRecorded
}

// list returns the items, oldest first.
func (r *ring[T]) list() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]T, 0, len(r.items))
	out = append(out, r.items[r.next:]...)
	return append(out, r.items[:r.next]...)
}

func (r *ring[T]) clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items, r.next = nil, 0
}

// adminTools are the privileged tools of the HTTP mode, there so that the
// gateway in front has something worth guarding.
func adminTools() []*mcp.Tool {
	return []*mcp.Tool{
		{
			Name:        "admin_reset_key",
			Description: "Rotate an API key (KEY-PRIMARY, KEY-SECONDARY). Privileged.",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"key_id": map[string]any{"type": "string", "pattern": "^KEY-[A-Z0-9_-]{1,32}$"},
				},
				"required":             []string{"key_id"},
				"additionalProperties": false,
			},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false},
		},
		{
			Name:        "admin_list_audit_log",
			Description: "List the most recent audit records of this server. Privileged.",
			InputSchema: map[string]any{
				"type":                 "object",
				"properties":           map[string]any{},
				"additionalProperties": false,
			},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		},
	}
}

// receivedRequest is one JSON-RPC request that reached the server, as
// listed by GET /_received. Each field is cut to maxField bytes (a cut
// string ends with "…"; an id cut is the JSON string of its first bytes
// and "…"), and Truncated says one was: the list's size stays bounded
// whatever the clients send.
type receivedRequest struct {
	Time      time.Time       `json:"time"`
	Method    string          `json:"method"`
	ID        json.RawMessage `json:"id,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Subject   string          `json:"subject,omitempty"`
	Role      string          `json:"role,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
}

// maxField bounds each field of a receivedRequest, in bytes (before the
// "…" of a cut one).
const maxField = 256

// cut returns s, or, when it is longer than maxField bytes, its first
// bytes with "…" appended, setting *truncated.
func cut(s string, truncated *bool) string {
	c, more := textsafe.CutBytes(s, maxField)
	if !more {
		return s
	}
	*truncated = true
	return c + "…"
}

// cutID is cut for an id, raw JSON: one longer than maxField bytes becomes
// the JSON string of its first bytes and "…".
func cutID(id json.RawMessage, truncated *bool) json.RawMessage {
	if len(id) <= maxField {
		return id
	}
	b, err := json.Marshal(cut(string(id), truncated))
	if err != nil {
		return nil
	}
	return b
}

// maxBody bounds the request bodies the recorder reads.
const maxBody = 4 << 20

// recorder records every JSON-RPC message POSTed to next, read as the
// go-sdk reads the body (see firstValue and readMessage), then hands the
// request on unchanged, but for a subscriptions/listen request, which it
// marks in its context for stopListens.
func recorder(rec *ring[receivedRequest], next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			// 413 only for a body over the limit: one cut short (the read
			// timeout, a client gone) is a bad request, not a large one.
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			} else {
				http.Error(w, "request body unreadable (cut short, or not sent in time)", http.StatusBadRequest)
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var truncated bool
		base := receivedRequest{
			Time:      time.Now().UTC(),
			Subject:   cut(r.Header.Get(headerSubject), &truncated),
			Role:      cut(r.Header.Get(headerRole), &truncated),
			RequestID: cut(r.Header.Get(headerRequestID), &truncated),
		}
		var msgs []message
		if first, ok := firstValue(body); ok && first[0] == '[' {
			// Only the last maxRecorded messages of a batch can stay
			// listed: the others are not read into the list at all.
			raws, _ := batchTail(first, maxRecorded)
			for _, raw := range raws {
				msgs = append(msgs, readMessage(raw))
			}
		} else {
			msgs = []message{readMessage(first)} // nil: "(unparseable)"
		}
		for _, m := range msgs {
			e := base
			e.Truncated = truncated
			e.Method, e.Tool = cut(m.Method, &e.Truncated), cut(m.Tool, &e.Truncated)
			e.ID = cutID(m.ID, &e.Truncated)
			rec.add(e)
		}
		if len(msgs) == 1 && msgs[0].Method == "subscriptions/listen" {
			r = r.WithContext(context.WithValue(r.Context(), listenKey{}, true))
		}
		next.ServeHTTP(w, r)
	})
}

// sdkMaxDepth is the deepest nesting of arrays and objects the go-sdk
// reads in a POSTed body (its internal/json defaultMaxDepth), counted as
// it counts it (jsondepth.Of).
const sdkMaxDepth = 1000

// firstValue returns the first JSON value of body as the go-sdk reads a
// POSTed body: JSON white space (space, tab, line feed, carriage return)
// before it is skipped, and whatever follows it is ignored, so
// `{...}xyz` is the message {...}, which the server runs. ok is false
// when body does not start with a JSON value (after a form feed or a
// no-break space, say), or nests arrays and objects deeper than
// sdkMaxDepth anywhere, which the go-sdk refuses unread.
func firstValue(body []byte) (json.RawMessage, bool) {
	if jsondepth.Of(body) > sdkMaxDepth {
		return nil, false
	}
	var v json.RawMessage
	if json.NewDecoder(bytes.NewReader(body)).Decode(&v) != nil || len(v) == 0 {
		return nil, false
	}
	return v, true
}

// jsonSpace is JSON's white space: Unicode's other spaces (a form feed, a
// no-break space) are not, as bytes.TrimSpace would have them.
const jsonSpace = " \t\n\r"

// batchTail returns the last n messages of b, a JSON array, and whether
// b is one (as json.Unmarshal would read it into a []json.RawMessage).
// It costs a validation and one pass, and holds at most n messages,
// however long the batch: a client cannot make the recorder spend more on
// a batch than the listing keeps of it.
func batchTail(b []byte, n int) ([]json.RawMessage, bool) {
	b = bytes.Trim(b, jsonSpace)
	if !json.Valid(b) || len(b) < 2 || b[0] != '[' {
		return nil, false
	}
	inner := b[1 : len(b)-1] // valid JSON: b ends with its ']'
	if len(bytes.Trim(inner, jsonSpace)) == 0 {
		return nil, true
	}
	tail := make([]json.RawMessage, 0, n) // once full, tail[next] is the oldest
	next := 0
	push := func(msg []byte) {
		msg = bytes.Trim(msg, jsonSpace)
		if len(tail) < n {
			tail = append(tail, msg)
			return
		}
		tail[next] = msg
		next = (next + 1) % n
	}
	// Valid JSON, so the members are split by the commas outside strings
	// at depth 0 (a byte of a multi-byte character is never ASCII).
	depth, inString, escaped, start := 0, false, false, 0
	for i, c := range inner {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			push(inner[start:i])
			start = i + 1
		}
	}
	push(inner[start:])
	return append(tail[next:], tail[:next]...), true
}

// message is what the recorder lists of one JSON-RPC message.
type message struct {
	Method string
	ID     json.RawMessage
	Tool   string
}

// readMessage reads raw as the go-sdk does: member names are
// case-sensitive ("Name" is not "name"; encoding/json's struct decoding
// would take it for one) and of a member given twice the last counts. A
// message it cannot read has the method "(unparseable)".
func readMessage(raw []byte) message {
	bad := message{Method: "(unparseable)"}
	var env map[string]json.RawMessage
	if json.Unmarshal(raw, &env) != nil || env == nil {
		return bad
	}
	var m message
	if v, ok := env["method"]; ok && json.Unmarshal(v, &m.Method) != nil {
		return bad
	}
	m.ID = env["id"]
	if m.Method == "tools/call" {
		var params map[string]json.RawMessage
		if json.Unmarshal(env["params"], &params) == nil {
			_ = json.Unmarshal(params["name"], &m.Tool) // not a string: no tool
		}
	}
	return m
}

// serveHTTP serves server, with the admin tools added, on cfg.httpAddr.
func serveHTTP(ctx context.Context, cfg config, server *mcp.Server, st *store, opts *mcpguard.Options, log *slog.Logger) error {
	addr, err := loopbackAddr(cfg.httpAddr, cfg.allowRemote)
	if err != nil {
		return err
	}
	recent := &ring[audit.Event]{}
	opts.Audit = audit.Fanout(opts.Audit, audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		recent.add(*e)
		return nil
	}))
	tools := adminTools()
	server.AddTool(tools[0], func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			KeyID string `json:"key_id"`
		}
		if err := decode(req, &in); err != nil {
			return nil, err
		}
		n, ok := st.resetKey(in.KeyID)
		if !ok {
			return result(map[string]any{"found": false, "key_id": in.KeyID, "known_keys": st.keyIDs()})
		}
		return result(map[string]any{"found": true, "key_id": in.KeyID, "status": "key_reset", "rotation": n})
	})
	server.AddTool(tools[1], func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		evs := recent.list()
		if len(evs) > 100 {
			evs = evs[len(evs)-100:]
		}
		return result(map[string]any{"events": evs})
	})

	// Deliberately no role rules: the gateway in front has authorized.
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_customer_record", Class: policy.Read},
			{Name: "trigger_refund", Class: policy.Write},
			{Name: "admin_reset_key", Class: policy.Write},
			{Name: "admin_list_audit_log", Class: policy.Read},
		},
		WriteAllowlist: []string{"trigger_refund", "admin_reset_key"},
	})
	if err != nil {
		return err
	}
	// Deliberately trusts whoever reaches it: the gateway's identity headers,
	// else "anonymous". Sound only behind the gateway (see -allow-remote),
	// unless REFUND_GATEWAY_SIGN_KEY is set (below): then /mcp takes only
	// requests the gateway signed.
	g, err := mcpguard.New(pol, mcpguard.FromGatewayHeaders(&policy.Principal{Subject: "anonymous"}), opts)
	if err != nil {
		return err
	}
	if err := g.Install(server); err != nil {
		return err
	}
	// Runs before the audit file's Close (serve's): a call past the
	// shutdown grace records its outcome first.
	defer waitCalls(g, log)

	received := &ring[receivedRequest]{}
	// Ended when the server stops (srv.RegisterOnShutdown, below): the
	// subscriptions/listen streams, which end only when cancelled.
	listens, endListens := context.WithCancel(context.Background())
	defer endListens()
	var mcpHandler http.Handler = recorder(received, stopListens(listens, mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: log})))
	v, set := os.LookupEnv(gatewaySignKeyEnv)
	signer, err := gatewaySigner(v, set)
	if err != nil {
		return err
	}
	if signer != nil {
		// Only requests the gateway signed reach the server (and the
		// record of what it received).
		mcpHandler = signer.Verify(mcpHandler, &token.GatewayVerifyOptions{Logger: log})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpHandler)
	mux.HandleFunc("GET /_received", func(w http.ResponseWriter, r *http.Request) {
		b, err := json.Marshal(received.list())
		if err != nil {
			http.Error(w, "the list could not be encoded", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, asciiJSON(b)+"\n")
	})
	mux.HandleFunc("DELETE /_received", func(w http.ResponseWriter, r *http.Request) {
		received.clear()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
	})

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if signer != nil {
		log.Info("refund: serving MCP over HTTP to the gateway only: requests must carry its signature ("+gatewaySignKeyEnv+")",
			"url", listenURL(addr, ln))
	} else {
		log.Warn("refund: serving MCP over HTTP WITHOUT authentication: it trusts whoever reaches it (the gateway demo's downstream)",
			"url", listenURL(addr, ln))
	}
	// A web page on another name that resolves to 127.0.0.1 (DNS
	// rebinding) must not read or clear /_received; the go-sdk checks /mcp
	// the same way. A page of another origin may POST without a preflight
	// (text/plain, a form), which the go-sdk refuses, but only after the
	// recorder listed it: such a request is refused (403) before.
	srv := newHTTPServer(loopback.Guard(http.NewCrossOriginProtection().Handler(mux)))
	srv.RegisterOnShutdown(endListens)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		// Longer than the 5 s after which Shutdown closes a connection
		// that was opened and sent nothing: such a client does not turn
		// the stop into a failure.
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			// Still open after the wait: closed now. The calls under
			// way are waited for with their records (waitCalls).
			log.Warn("refund: HTTP connections still open 10 s after the stop; closing them", "err", err)
			srv.Close()
		}
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// stopListens hands next a subscriptions/listen request (SEP-2575: the
// go-sdk's client on protocol 2026-07-28 opens one to hear of list changes
// and holds it open) with a context that also ends with stop, so that the
// stream ends, answered, when the server stops. The go-sdk ends a listen
// only when its request's context ends: without this a connected client
// held every stop for its whole grace, and the stop was logged as a
// failure. Every other request keeps its context, so that the calls under
// way are answered. The recorder, in front, tells a listen (listenKey).
func stopListens(stop context.Context, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if listen, _ := r.Context().Value(listenKey{}).(bool); listen {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(stop, cancel)()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// listenURL is the URL of /mcp on ln, listening on addr (-http): with the
// host as the operator wrote it, not as the listener reports it (Go's
// listener on 0.0.0.0 is dual-stack, and says [::]), and ln's port (addr's
// may be 0).
func listenURL(addr string, ln net.Listener) string {
	shown := ln.Addr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" {
		if _, port, err := net.SplitHostPort(shown); err == nil {
			shown = net.JoinHostPort(host, port)
		}
	}
	return "http://" + shown + "/mcp"
}

// listenKey is the context key under which the recorder says that a
// request's body is one subscriptions/listen request.
type listenKey struct{}

// gatewaySignKeyEnv names the environment variable holding the key (hex,
// at least 32 bytes) shared with the gateway (its MCP_GATEWAY_SIGN_KEY): when set,
// /mcp takes only requests the gateway signed with it.
const gatewaySignKeyEnv = "REFUND_GATEWAY_SIGN_KEY"

// gatewaySigner returns the verifier of the key written in hex in v, nil
// when the variable is unset (not set). A set but blank value is an error:
// a key lost on the way (an export in another shell) must not turn the
// server back into one that trusts whoever reaches it.
func gatewaySigner(v string, set bool) (*token.GatewaySigner, error) {
	if !set {
		return nil, nil
	}
	if strings.TrimSpace(v) == "" {
		return nil, errors.New(gatewaySignKeyEnv + " is set but empty: give the gateway's key, or unset it")
	}
	key, err := hex.DecodeString(strings.TrimSpace(v))
	if err != nil {
		return nil, errors.New(gatewaySignKeyEnv + " is not hex")
	}
	s, err := token.NewGatewaySigner(key)
	if err != nil {
		return nil, errors.New(gatewaySignKeyEnv + ": " + err.Error())
	}
	return s, nil
}

// Timeouts of the HTTP server. Nothing of the guard applies before a request
// has been read, so a connection that stalls in its headers or body, or
// idles between requests, is closed: a request (at most 4 MiB, the go-sdk's
// cap) must arrive within httpReadTimeout. There is no write timeout: a
// write timeout would cut a slow call's answer.
const (
	httpReadHeaderTimeout = 10 * time.Second
	httpReadTimeout       = 30 * time.Second
	httpIdleTimeout       = 2 * time.Minute
)

// newHTTPServer returns the HTTP server of h, with the timeouts above.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: httpReadHeaderTimeout, ReadTimeout: httpReadTimeout, IdleTimeout: httpIdleTimeout}
}

// asciiJSON is [textsafe.ASCIIJSON] of js: a tool name
// "\u200badmin_reset_key" does not read as admin_reset_key.
func asciiJSON(js []byte) string { return textsafe.ASCIIJSON(string(js)) }

// loopbackAddr returns addr with an empty host replaced by 127.0.0.1, and
// refuses a port that is not a number from 0 to 65535 and a non-loopback
// host unless allowRemote.
func loopbackAddr(addr string, allowRemote bool) (string, error) {
	// The value as cliarg shows it: a URL with its password put here by
	// mistake is not echoed.
	hostport, local, err := loopback.ListenAddr(addr)
	if err != nil {
		return "", fmt.Errorf("-http %s: %v", cliarg.Shown(addr), err)
	}
	if !local && !allowRemote {
		return "", fmt.Errorf("-http %s is not a loopback address; the HTTP mode is unauthenticated (add -allow-remote to insist)", cliarg.Shown(addr))
	}
	return hostport, nil
}
