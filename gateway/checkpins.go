package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/mcpguard/mcpguard/internal/logsafe"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CheckPins lists the downstream's tools once, every page, through g as
// caller, so that g's [Pins] judge the downstream's definitions before a
// client calls a tool: a tool changed while the gateway was not running
// is withheld, and its calls refused, from the first request, not from
// the first listing a client makes (see [Pins]). It returns how many
// tools the listing kept, each name counted once. The initialize answer
// passes through g too, so the server's instructions are judged as well
// ([InstructionsPin]). Call it before g serves, and after a restart of
// the downstream if clients keep their listings across one.
//
// The listing is a go-sdk client's (initialize, then tools/list pages,
// then the session's end), made in process: no listener, no token. It
// passes through g as any client's listing does: logged as caller, with
// caller's identity in the headers sent downstream, a tool the pins
// withhold recorded under caller (a listing is not itself authorized by
// the policy, nor charged against the limits: those judge tools/call),
// and with [Options.FilterToolsList] the tools caller may not call are
// left out, and not judged. So pass a caller who may see
// every tool, or call CheckPins on a gateway sharing the Pins (and the
// audit sink) without a filter, as the examples/gateway binary does.
// Only g takes caller from these requests: a second gateway they reach
// in process (through Options.Transport) asks them for a token, as it
// does any request. ctx bounds the whole listing; a request it cuts short
// is still read from the downstream for at most [Options.Timeout] after
// CheckPins returns, as a POST whose client went away is.
//
// CheckPins fails when g has no Pins, when caller has no subject or a
// value the identity headers cannot carry, and when the listing fails,
// including a listing that hands out a cursor again or goes on past 1000
// pages (a downstream's listing that would never end); the pages listed
// before have been judged as any listing is, and the Pins otherwise keep
// what they knew.
func (g *Gateway) CheckPins(ctx context.Context, caller *policy.Principal) (int, error) {
	if g.pins == nil {
		return 0, errors.New("gateway: CheckPins: the gateway has no Pins")
	}
	if caller == nil || caller.Subject == "" {
		return 0, errors.New("gateway: CheckPins: the caller has no subject")
	}
	if err := token.CheckPrincipal(caller); err != nil {
		return 0, fmt.Errorf("gateway: CheckPins: %w", err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpguard-gateway-check-pins", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		// The host is never resolved: every request is served by g in
		// process (inProcess).
		Endpoint:   "http://mcpguard-gateway.invalid" + g.path,
		HTTPClient: &http.Client{Transport: inProcess{g: g, caller: caller}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		return 0, fmt.Errorf("gateway: CheckPins: connecting to the downstream: %w", err)
	}
	defer cs.Close()
	kept := map[string]bool{}
	cursors := map[[sha256.Size]byte]bool{} // hashes: a cursor may be long
	params := &mcp.ListToolsParams{}
	for page := 1; ; page++ {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return 0, fmt.Errorf("gateway: CheckPins: listing the downstream's tools: %w", err)
		}
		for _, t := range res.Tools {
			if t != nil {
				kept[t.Name] = true
			}
		}
		if res.NextCursor == "" {
			return len(kept), nil
		}
		h := sha256.Sum256([]byte(res.NextCursor))
		switch {
		case cursors[h]:
			return 0, errors.New("gateway: CheckPins: the downstream's listing hands out a cursor again: it would never end")
		case page >= maxCheckPages:
			return 0, fmt.Errorf("gateway: CheckPins: the downstream's listing goes on past %d pages", maxCheckPages)
		}
		cursors[h] = true
		params.Cursor = res.NextCursor
	}
}

// maxCheckPages bounds the pages of the listing CheckPins makes: a
// downstream that hands out a new cursor with every page would otherwise
// be asked for pages until ctx ends.
const maxCheckPages = 1000

// inProcessCaller is the context key under which a request served in
// process ([inProcess]) carries its caller, an *inProcessAuth. Only this
// package can set it, and a request from the network never has it.
type inProcessCaller struct{}

// inProcessAuth is the caller of a request served in process, for the
// gateway g that serves it and no other: the requests g sends downstream
// carry their client's context, and a second gateway served in process
// there (an Options.Transport) must not take the caller from it.
type inProcessAuth struct {
	g      *Gateway
	caller *policy.Principal
}

// inProcessPrincipal returns the caller of r when g serves it in process
// for [Gateway.CheckPins], or nil.
func (g *Gateway) inProcessPrincipal(r *http.Request) *policy.Principal {
	if a, ok := r.Context().Value(inProcessCaller{}).(*inProcessAuth); ok && a != nil && a.g == g {
		return a.caller
	}
	return nil
}

// inProcess is an http.RoundTripper that serves each request with g's
// handler, in process, as caller: the request carries no Authorization
// header and g's authentication takes the caller from its context. The
// answer's body is streamed through a pipe as g writes it, so event
// streams work; closing it makes g's next write fail, as a client's
// hang-up does.
type inProcess struct {
	g      *Gateway
	caller *policy.Principal
}

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := context.WithValue(r.Context(), inProcessCaller{}, &inProcessAuth{g: t.g, caller: t.caller})
	// It came to no address: a local address in the caller's context (a
	// CheckPins made while serving a request on a loopback listener) would
	// have it judged as a request to that listener under another name,
	// and refused as DNS rebinding.
	ctx = context.WithValue(ctx, http.LocalAddrContextKey, nil)
	r = r.Clone(ctx)
	r.Header.Del("Authorization")
	if r.Body == nil {
		r.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{h: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			// As a server does once its handler returns, and as a
			// RoundTripper must: before the answer ends.
			r.Body.Close()
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					// The gateway's way to cut an answer short
					// (abortCut): a read error, as a client's.
					w.fail(errAnswerCut)
					return
				}
				w.fail(fmt.Errorf("gateway: panic serving in process: %s", logsafe.PanicText(v)))
				return
			}
			w.WriteHeader(http.StatusOK) // a handler that wrote nothing
			pw.Close()
		}()
		t.g.ServeHTTP(w, r)
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		pr.CloseWithError(ctx.Err()) // g's next write fails
		return nil, ctx.Err()
	}
	if w.err != nil {
		pr.Close()
		return nil, w.err
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          pr,
		ContentLength: -1,
		Request:       r,
	}, nil
}

// errAnswerCut ends the body of an answer served in process that the
// gateway cut short ([abortCut]).
var errAnswerCut = errors.New("gateway: the downstream's answer was cut short")

// pipeWriter is the http.ResponseWriter of a request served in process:
// the header is handed over (ready closed) at the first WriteHeader or
// Write, the body through pw.
type pipeWriter struct {
	h      http.Header
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
	status int
	sent   http.Header
	err    error // set before ready is closed: the handler panicked first
}

func (w *pipeWriter) Header() http.Header { return w.h }

func (w *pipeWriter) WriteHeader(code int) {
	if code >= 100 && code < 200 {
		return // informational: nothing for the client
	}
	w.once.Do(func() {
		w.status, w.sent = code, w.h.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush does nothing: every Write reaches the reader as it is made.
func (w *pipeWriter) Flush() {}

// fail ends the answer with err: the round trip's error when the header
// was not handed over yet, the body's read error when it was.
func (w *pipeWriter) fail(err error) {
	w.once.Do(func() {
		w.err = err
		close(w.ready)
	})
	w.pw.CloseWithError(err)
}
