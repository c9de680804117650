package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/cliarg"
	"github.com/mcpguard/mcpguard/internal/jsondup"
	"github.com/mcpguard/mcpguard/internal/textsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gatewayClient calls the RoboShop gateway as the caller. Only these
// headers leave the server: accept, origin and content-type for bodies,
// and the caller's own session as the rs_auth cookie. Never client
// headers, never a credential of the server's (it has none). It does not
// follow redirects, keeps no cookie jar and uses no proxy, so the session
// goes to the gateway and nowhere else.
type gatewayClient struct {
	base   *url.URL
	origin string
	hc     *http.Client
}

// maxGatewayBody bounds what the shop reads of a gateway answer.
const maxGatewayBody = 4 << 20

func newGatewayClient(base, origin string) (*gatewayClient, error) {
	u, err := gatewayURL(base)
	if err != nil {
		return nil, err
	}
	if origin == "" {
		origin = urlOrigin(u)
	} else if err := checkOrigin(origin); err != nil {
		return nil, err
	} else {
		// Sent as a browser serialises it, as the default is: a CSRF check
		// comparing it with the gateway's own origin refuses
		// https://Shop.Example:443 (every write would fail as forbidden).
		o, _ := url.Parse(origin)
		origin = urlOrigin(o)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy, tr.DisableCompression = nil, true
	return &gatewayClient{base: u, origin: origin, hc: &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// gatewayURL parses the gateway's base URL: http or https, a host, and
// optionally a path; no user info (Go's HTTP client would send it to the
// gateway as an Authorization header, a credential of the server's), no
// query (each request sets its own) and no fragment, and a host of
// printable ASCII (see asciiHost). The error does not repeat the value,
// which may hold a password.
func gatewayURL(base string) (*url.URL, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
		return nil, errors.New("--gateway: want http(s)://host[:port][/path], without user info, query or fragment")
	}
	if !asciiHost(u.Host) {
		return nil, errors.New("--gateway: the host is not printable ASCII (an internationalized name goes in its xn-- form)")
	}
	if !portOK(u) {
		return nil, errors.New("--gateway: the port must be a number from 1 to 65535")
	}
	return u, nil
}

// portOK reports whether u's port, if it has one, is a number from 1 to
// 65535. url.Parse takes any run of digits (http://host:99999): no
// request could reach such a port, and no browser sends it in an Origin.
func portOK(u *url.URL) bool {
	p := u.Port()
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// asciiHost reports whether host (a URL's, percent-decoded) is printable
// ASCII. A browser sends an internationalized name in its Origin in its
// xn-- form, as Go's HTTP client sends it as Host; the shop has no IDNA
// tables to spell it so, and an Origin of https://bücher.example would
// fail every CSRF check.
func asciiHost(host string) bool {
	for i := 0; i < len(host); i++ {
		if host[i] <= ' ' || host[i] > '~' {
			return false
		}
	}
	return true
}

// urlOrigin returns the origin of u as a browser sends it in an Origin
// header (RFC 6454): the scheme and the host in lower case, and the port
// only when it is not the scheme's default, so that a CSRF check comparing
// it with the gateway's own origin accepts it (https://Shop.Example:443 is
// https://shop.example). An IPv6 literal's zone is left out, as Go's HTTP
// client leaves it out of the Host it sends and a browser sends none
// (http://[fe80::1%25eth0]:8080 is http://[fe80::1]:8080).
func urlOrigin(u *url.URL) string {
	host := strings.TrimSuffix(u.Host, ":")
	if i := strings.LastIndex(host, "]"); strings.HasPrefix(host, "[") && i > 0 {
		if j := strings.LastIndex(host[:i], "%"); j > 0 {
			host = host[:j] + host[i:]
		}
	}
	if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		host = strings.TrimSuffix(host, ":"+p)
	}
	return u.Scheme + "://" + strings.ToLower(host)
}

// checkOrigin checks an --origin value: an http or https origin,
// scheme://host[:port], and nothing more, as a browser sends it (a host
// of printable ASCII, asciiHost; a port from 1 to 65535, portOK).
func checkOrigin(origin string) error {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" ||
		!asciiHost(u.Host) || !portOK(u) {
		return fmt.Errorf("--origin %s: want an origin, http(s)://host[:port] (a port from 1 to 65535)", cliarg.ShownURL(origin))
	}
	return nil
}

// checkAllowedOrigins refuses an --allowed-origins entry that no browser's
// Origin can equal, which would silently allow nothing: one that is not
// http(s)://host[:port] (a path, a trailing slash, user information, no
// scheme, a port outside 1 to 65535) or that writes out its scheme's
// default port (browsers leave it out). An entry may end in ":*" for any
// port.
func checkAllowedOrigins(origins []string) error {
	for _, o := range origins {
		base, anyPort := strings.CutSuffix(o, ":*")
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" ||
			!asciiHost(u.Host) || anyPort && u.Port() != "" || !portOK(u) {
			return fmt.Errorf("--allowed-origins %s: want an origin, http(s)://host[:port] (a port from 1 to 65535) or http(s)://host:*, as a browser sends it", cliarg.ShownURL(o))
		}
		if p := u.Port(); u.Scheme == "http" && p == "80" || u.Scheme == "https" && p == "443" {
			return fmt.Errorf("--allowed-origins %s: leave out the default port, as browsers do in Origin", cliarg.ShownURL(o))
		}
	}
	return nil
}

// gatewayResponse is a gateway answer: its status and body. An answer
// over maxGatewayBody has tooLarge set and no body: it is malformed, not a
// sign that the gateway is unavailable, so it is never retried.
type gatewayResponse struct {
	status   int
	body     []byte
	tooLarge bool
}

// do sends r with session as the caller's cookie.
func (c *gatewayClient) do(ctx context.Context, session string, r gatewayRequest) (*gatewayResponse, error) {
	u := c.base.JoinPath(r.path)
	u.RawQuery = r.query.Encode()
	var body io.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return nil, err
	}
	// A fresh header: nothing of the MCP client's request is in it.
	req.Header = http.Header{"Accept": {"application/json"}, "User-Agent": {""}}
	if r.body != nil {
		req.Header.Set("Origin", c.origin) // the gateway's CSRF check for state changes
		req.Header.Set("Content-Type", "application/json")
	}
	if session != "" {
		req.Header.Set("Cookie", "rs_auth="+session)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxGatewayBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxGatewayBody {
		return &gatewayResponse{status: resp.StatusCode, tooLarge: true}, nil
	}
	return &gatewayResponse{status: resp.StatusCode, body: b}, nil
}

// transientStatus reports whether a gateway status may pass on a retry.
func transientStatus(s int) bool {
	return s == http.StatusBadGateway || s == http.StatusServiceUnavailable || s == http.StatusGatewayTimeout
}

// handler returns the tool handler of spec: it builds the gateway request
// from the validated arguments, sends it as the caller (the credential the
// guard's authenticator put in the context), and shapes the answer. The
// guard around it has validated the arguments, checked the session and
// limits, confirmed admin writes, set the deadline (10 s in all, retries
// included) and, for a write, detached the context from the client's
// cancellation; it retries a read once when this returns an error that
// unwraps to mcpguard.ErrUpstreamUnavailable, and never retries a write.
func (s *shop) handler(spec *toolSpec) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := mcpguard.FromContext(ctx)
		if id == nil || id.Credential.IsZero() {
			return nil, errors.New("no caller session in the context")
		}
		args := map[string]any{}
		if len(req.Params.Arguments) > 0 {
			dec := json.NewDecoder(bytes.NewReader(req.Params.Arguments))
			dec.UseNumber()
			if err := dec.Decode(&args); err != nil {
				return nil, err
			}
		}
		start := time.Now()
		resp, err := s.gw.do(ctx, id.Credential.Reveal(), spec.request(args))
		if err != nil || transientStatus(resp.status) {
			why := "no answer"
			if err == nil {
				why = http.StatusText(resp.status)
			} else if errors.Is(err, context.DeadlineExceeded) {
				why = "deadline exceeded"
			}
			corr := correlationID(ctx)
			s.log.Warn("shop: gateway unavailable", "tool", spec.name, "why", why, "write", spec.write,
				"duration_ms", time.Since(start).Milliseconds(), "correlation_id", corr)
			if spec.write {
				// Never retried, never reported retryable: the change may
				// have been made. The guard would refuse a write failing
				// with ErrUpstreamUnavailable as non-retryable too; this
				// message says what to do.
				d := mcpguard.Deny(mcpguard.CodeUpstreamUnavailable,
					"the gateway did not answer; the change may or may not have been made: check before repeating it")
				d.RetryAfter, d.CorrelationID = -1, corr
				return d.Result(), nil
			}
			return nil, fmt.Errorf("%w: %s", mcpguard.ErrUpstreamUnavailable, why)
		}
		if resp.status >= 200 && resp.status < 300 {
			doc := decodeAnswer(resp)
			if doc == nil {
				s.log.Warn("shop: malformed gateway answer", "tool", spec.name, "too_large", resp.tooLarge,
					"correlation_id", correlationID(ctx))
			}
			return jsonResult(spec.shape(args, doc))
		}
		corr := correlationID(ctx)
		s.log.Info("shop: gateway refused", "tool", spec.name, "status", resp.status, "correlation_id", corr)
		return gatewayError(resp, spec.write, corr), nil
	}
}

// decodeAnswer decodes a 2xx gateway body, with json.Number for numbers,
// and removes the invisible characters of its strings (see visible). It
// returns nil when the body is malformed: not exactly one JSON value (not
// JSON, a value followed by more data, over the size cap), an object with
// a key twice (readers disagree on which one counts; a gateway that
// encodes its answers never sends one), or a number beyond float64, which
// no client can read. Every output schema refuses the view of nil, so the
// guard answers INVALID_RESPONSE, and does not retry (a malformed answer
// is not an unavailable gateway).
func decodeAnswer(resp *gatewayResponse) any {
	if resp.tooLarge || duplicateKey(resp.body) {
		return nil
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(resp.body))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return nil
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil // trailing data after the first value
	}
	doc, ok := clean(doc)
	if !ok {
		return nil
	}
	return doc
}

// duplicateKey reports whether body, if it is JSON, has an object with the
// same key twice (compared once unescaped).
func duplicateKey(body []byte) bool {
	_, _, found := jsondup.Member(body, nil)
	return found
}

// duplicateKeyFolded is duplicateKey with keys compared under Unicode case
// folding, as encoding/json matches a struct's fields: for a body decoded
// into a struct.
func duplicateKeyFolded(body []byte) bool {
	_, _, found := jsondup.Member(body, func(int) bool { return true })
	return found
}

// clean removes the invisible characters of every string in doc, in place,
// and reports false if a number in it is beyond float64.
func clean(doc any) (any, bool) {
	switch x := doc.(type) {
	case string:
		return visible(x), true
	case json.Number:
		_, err := x.Float64()
		return x, err == nil
	case []any:
		for i, v := range x {
			c, ok := clean(v)
			if !ok {
				return nil, false
			}
			x[i] = c
		}
	case map[string]any:
		for k, v := range x {
			c, ok := clean(v)
			if !ok {
				return nil, false
			}
			x[k] = c
		}
	}
	return doc, true
}

// visible returns s without the characters a person reading it cannot
// see but a model reads (textsafe.CleanLines, uncut): control characters
// other than tab and newline (terminal escapes among them), format
// characters (bidi overrides, zero-width characters, the soft hyphen,
// U+FEFF, and the Unicode tag characters that can spell out hidden ASCII
// text; emoji joined with U+200D fall apart into their parts), the other
// characters Unicode says are shown as nothing (the Hangul fillers U+3164
// and U+FFA0, the combining grapheme joiner U+034F), line and paragraph
// separators, and the supplementary variation selectors U+E0100-U+E01EF,
// which can carry hidden bytes. Visible text is left as it is.
func visible(s string) string { return textsafe.CleanLines(s, len(s)) }

// jsonResult returns v as structured content and as its JSON text.
func jsonResult(v any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}

// toolError is the safe structure of a gateway's refusal, as the seed
// reports it: {"error":{"code","message","retryable","detail"?,
// "correlationId"}}.
type toolError struct {
	Code          string `json:"code"`
	Message       string `json:"message"`
	Retryable     bool   `json:"retryable"`
	Detail        string `json:"detail,omitempty"`
	CorrelationID string `json:"correlationId"`
}

// maxDetail bounds the gateway's public message in a tool error.
const maxDetail = 300

// gatewayError turns a gateway's non-2xx answer into a tool-error result.
// detail is only ever the gateway's own public message for a 400, 404 or
// 409; retryable is never true for a write.
func gatewayError(resp *gatewayResponse, write bool, corr string) *mcp.CallToolResult {
	e := toolError{CorrelationID: corr}
	switch resp.status {
	case http.StatusBadRequest:
		e.Code, e.Message = "bad_request", "The gateway refused the request as invalid."
	case http.StatusNotFound:
		e.Code, e.Message = "not_found", "The requested record was not found."
	case http.StatusConflict:
		e.Code, e.Message = "conflict", "The change conflicts with the current state; nothing was changed."
	case http.StatusUnauthorized:
		e.Code, e.Message = "unauthenticated", "The RoboShop session is no longer valid; sign in again."
	case http.StatusForbidden:
		e.Code, e.Message = "forbidden", "The RoboShop account may not do this."
	case http.StatusTooManyRequests:
		e.Code, e.Message, e.Retryable = "rate_limited", "The gateway is busy; try again later.", !write
	default:
		e.Code, e.Message = "upstream_error", "The gateway failed to answer this request."
	}
	switch resp.status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict:
		e.Detail = publicMessage(resp.body)
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

// publicMessage returns the gateway's message from its error body
// ({"error":{"message"}} or {"message"}), without the invisible characters
// of visible, tabs and line breaks, cut to maxDetail characters, or "".
func publicMessage(body []byte) string {
	var v struct {
		Error   struct{ Message string } `json:"error"`
		Message string                   `json:"message"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	msg := v.Error.Message
	if msg == "" {
		msg = v.Message
	}
	// What a 2xx answer's strings lose (visible), and the tabs and line
	// breaks visible keeps: the detail is one line.
	msg = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, visible(msg))
	if r := []rune(msg); len(r) > maxDetail {
		msg = string(r[:maxDetail])
	}
	return msg
}

// correlationID returns the correlation id of the audit record of the
// call ctx belongs to ([mcpguard.CorrelationID]), so that the shop's
// errors and log lines name that record; a random one outside a guarded
// call (never the case for a registered tool).
func correlationID(ctx context.Context) string {
	if id := mcpguard.CorrelationID(ctx); id != "" {
		return id
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// logger returns l, or a logger that discards.
func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
