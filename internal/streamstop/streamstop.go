// Package streamstop ends the MCP event streams of an HTTP server at its
// shutdown.
//
// A go-sdk client holds an event stream open on its server for as long as
// its session lasts: the GET of a stateful session, and on protocol
// 2026-07-28 a subscriptions/listen request, which the go-sdk ends only when
// the request's context ends. Such a stream keeps its connection active, so
// http.Server.Shutdown waits for it until its own context runs out, and
// then the server closes the connections left, those of the calls under
// way with them. [Handler] gives each stream a context that ends when the
// server shuts down: the go-sdk then ends the stream (it answers a listen),
// its client reconnects (to another server behind a load balancer), and
// Shutdown waits for the calls only.
package streamstop

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
)

// peekLimit is how much of a POST's body [Handler] reads to tell a
// subscriptions/listen request: one is small.
const peekLimit = 64 << 10

// Handler returns next, with the context of each event stream request for
// path (a GET, or a POST whose body is one subscriptions/listen request)
// ended when stop is done (at once when it is already); the other requests
// are passed on as they are. The body of a POST for path is peeked at, at
// most 64 KiB of it, and given to next whole.
//
// stop is typically a context whose cancel function is registered with
// http.Server.RegisterOnShutdown.
func Handler(stop context.Context, path string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path && (r.Method == http.MethodGet || r.Method == http.MethodPost && listen(r)) {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(stop, cancel)()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// listen reports whether r's body is one subscriptions/listen request,
// reading at most peekLimit bytes of it and leaving r.Body as it was.
func listen(r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return false
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, peekLimit))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil || !bytes.Contains(head, []byte(`subscriptions/listen"`)) && !bytes.Contains(head, []byte(`subscriptions\/listen"`)) {
		return false // most bodies: not decoded
	}
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(head, &m) == nil && m.Method == "subscriptions/listen"
}
