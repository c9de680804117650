package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview12EvictionDoesNotFailACallAboutToBeSent: README: closing an
// evicted REST session "waits for its calls in flight, which complete
// normally". A call is the session's from the moment the sessions hand it
// out (restSessions.call), not only once its request is on the wire: when
// another caller's new sessions evict bob's session in between, bob's
// call must still go through, not fail as "connection closed" (a 500 for
// a call bob did nothing wrong in, which another caller can cause at
// will).
func TestReview12EvictionDoesNotFailACallAboutToBeSent(t *testing.T) {
	ta := newTestApp(t, nil)
	bob := http.Header{"Authorization": {"Bearer token-bob"}}

	// Hold bob's tools/call between the sessions handing out his
	// session and the request being sent.
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ta.rest.client.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if h, _ := ctx.Value(headerKey{}).(http.Header); method == "tools/call" && h.Get("Authorization") == "Bearer token-bob" {
				once.Do(func() {
					close(reached)
					<-release
				})
			}
			return next(ctx, method, req)
		}
	})
	type reply struct {
		res *mcp.CallToolResult
		err error
	}
	bobs := make(chan reply, 1)
	go func() {
		res, err := ta.rest.call(context.Background(), bob, "bob-s", "search_docs", []byte(`{"query":""}`))
		bobs <- reply{res, err}
	}()
	select {
	case <-reached:
	case r := <-bobs:
		t.Fatalf("bob's call ended before it was held: %+v", r)
	case <-time.After(20 * time.Second):
		t.Fatal("bob's call never reached the client")
	}

	// alice opens maxRESTSessions sessions: bob's, the oldest, is evicted.
	filled := make(chan error, 1)
	go func() {
		for i := range maxRESTSessions {
			if _, err := ta.rest.get(context.Background(), fmt.Sprint("fill-", i), "alice"); err != nil {
				filled <- err
				return
			}
		}
		filled <- nil
	}()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Millisecond) {
		ta.rest.mu.Lock()
		_, open := ta.rest.sessions[restKey{"bob-s", "bob"}]
		ta.rest.mu.Unlock()
		if !open {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("bob's session was never evicted")
		}
	}
	close(release)

	select {
	case r := <-bobs:
		if r.err != nil {
			t.Fatalf("bob's call on his evicted session: %v; want it to complete", r.err)
		}
		if r.res.IsError {
			t.Fatalf("bob's call on his evicted session: refused %v", r.res.StructuredContent)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("bob's call never ended")
	}
	if err := <-filled; err != nil {
		t.Fatal(err)
	}
	// Evicted, and closed once the call was done: his next call opens it
	// again under the same id, with the budget it had (1 of 5 used).
	for i := 2; i <= 5; i++ {
		if o := ta.call(t, "token-bob", "bob-s", "search_docs", map[string]any{"query": ""}); o.code != "" {
			t.Fatalf("bob's call %d: %s", i, o.code)
		}
	}
	if o := ta.call(t, "token-bob", "bob-s", "search_docs", map[string]any{"query": ""}); o.code != "RATE_LIMIT_EXCEEDED" {
		t.Errorf("bob's sixth call: %q, want RATE_LIMIT_EXCEEDED (the first counted)", o.code)
	}
}

// TestReview12BackendCredentialsAreNotPrinted: README: "no error message
// shows the URL" of --audit-postgres, whose password pgx may read from it.
// The same must hold for a --redis given as a URL or with user info
// (redis://:password@host:port, the form Redis clients take), which is not
// host:port: a usage error (exit 2) that does not print the password, nor
// accepted (an address of a host named "user@host"), to be printed by the
// connection error. A URL left without its flag (--audit-postgres= URL,
// the flag forgotten) is an unexpected argument, likewise not printed.
func TestReview12BackendCredentialsAreNotPrinted(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"redis_url_with_password", []string{"--redis", "redis://:s3cret@127.0.0.1:6379"}, "--redis"},
		{"redis_user_and_password", []string{"--redis", "default:s3cret@127.0.0.1:6379"}, "--redis"},
		{"redis_password_as_user", []string{"--redis", "s3cret@127.0.0.1:6379"}, "--redis"},
		{"redis_path", []string{"--redis", "127.0.0.1/0:6379"}, "--redis"},
		{"postgres_url_without_flag", []string{"--audit-postgres=", "postgres://u:s3cret@127.0.0.1/db"}, "unexpected arguments"},
		{"postgres_url_flag_forgotten", []string{"postgres://u:s3cret@127.0.0.1/db"}, "unexpected arguments"},
		{"password_query_without_flag", []string{"postgres://127.0.0.1/db?password=s3cret"}, "unexpected arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stderr := &syncBuffer{}
			args := append([]string{"serve-http", "--port", "0", "--audit-dir", t.TempDir()}, c.args...)
			code := run(t.Context(), args, io.Discard, stderr)
			if code != 2 || !strings.Contains(stderr.String(), c.want) || strings.Contains(stderr.String(), "s3cret") {
				t.Errorf("serve-http %q: exit %d, stderr %q; want exit 2 mentioning %q, no password", c.args, code, stderr, c.want)
			}
		})
	}
	// Other mistakes are still shown as given.
	stderr := &syncBuffer{}
	if code := run(t.Context(), []string{"serve-http", "--redis", "127.0.0.1"}, io.Discard, stderr); code != 2 || !strings.Contains(stderr.String(), `"127.0.0.1"`) {
		t.Errorf("--redis 127.0.0.1: exit %d, stderr %q; want exit 2 quoting it", code, stderr)
	}
	stderr = &syncBuffer{}
	if code := run(t.Context(), []string{"demo", "now"}, io.Discard, stderr); code != 2 || !strings.Contains(stderr.String(), `"now"`) {
		t.Errorf("demo now: exit %d, stderr %q; want exit 2 quoting the argument", code, stderr)
	}
}

// TestReview12RESTSessionIDsAreOneToOne: restSessionID keeps every
// (X-Session-Id, subject) pair apart, whatever the subject holds ('@',
// '/', '%', an escape's own text, unicode, nothing), stays printable
// ASCII, and never looks like the stdio session's id or a Streamable HTTP
// one (the go-sdk's: base32 letters and digits only).
func TestReview12RESTSessionIDsAreOneToOne(t *testing.T) {
	names := []string{"a", "a.b", "a:b", "a-b", "rest-a", "x"}
	subjects := []string{"", "b", "a", "@", "b@c", "c@b", "a@b@c", "/", "%", "%40", "%2F", "b/c", "b%2Fc",
		"é", "%C3%A9", " ", "+", "b\x00", "b\n", "stdio-x", "\u2028"}
	seen := map[string][2]string{}
	for _, n := range names {
		if !sessionName.MatchString(n) {
			t.Fatalf("%q is not a valid X-Session-Id", n)
		}
		for _, s := range subjects {
			id := restSessionID(n, s)
			if prev, ok := seen[id]; ok {
				t.Errorf("restSessionID(%q, %q) = restSessionID(%q, %q) = %q", n, s, prev[0], prev[1], id)
			}
			seen[id] = [2]string{n, s}
			if !strings.HasPrefix(id, "rest-") {
				t.Errorf("restSessionID(%q, %q) = %q, want the rest- prefix", n, s, id)
			}
			for _, r := range id {
				if r < 0x21 || r > 0x7e {
					t.Errorf("restSessionID(%q, %q) = %q: not printable ASCII", n, s, id)
					break
				}
			}
		}
	}
}
