package gateway

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview28SignedDownstream sends every kind of request the gateway
// forwards (a single POST, a batch whose members share its request id and
// two of which are the same bytes, a GET stream, a DELETE) through a
// gateway with a Signer to a downstream that verifies: each reaches it,
// with the identity the gateway set, and a request sent to the downstream
// directly does not.
func TestReview28SignedDownstream(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	signer, err := token.NewGatewaySigner(key)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reached []string
	var logs syncBuf
	down := httptest.NewServer(signer.Verify(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		reached = append(reached, r.Method+" "+r.Header.Get(HeaderSubject)+" "+string(b))
		mu.Unlock()
		switch r.Method {
		case http.MethodPost:
			id := string(b[strings.Index(string(b), `"id":`)+5 : strings.Index(string(b), `,"method"`)])
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`)
		case http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, ": hello\n\n")
		default:
			w.WriteHeader(http.StatusOK)
		}
	}), &token.GatewayVerifyOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	defer down.Close()
	for _, own := range []bool{true, false} {
		var rt http.RoundTripper
		if !own {
			rt = NewTransport()
		}
		g, err := New(down.URL+"/mcp?x=1", DemoTokens(), &Options{Signer: signer, Transport: rt,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		gw := httptest.NewServer(g)
		const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
		for _, tc := range []struct {
			method, body, version string
			want                  int // requests that reach the downstream
		}{
			{http.MethodPost, ping, "", 1},
			{http.MethodPost, "[" + ping + "," + strings.Replace(ping, "1", "2", 1) + "," + ping + "]", "2025-03-26", 3},
			{http.MethodGet, "", "", 1},
			{http.MethodDelete, "", "", 1},
		} {
			mu.Lock()
			reached = nil
			mu.Unlock()
			req, _ := http.NewRequest(tc.method, gw.URL+"/mcp", strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer viewer-token")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set(token.HeaderSignature, "t=1,n=00000000000000000000000000000000,v1=00")
			if tc.version != "" {
				req.Header.Set("Mcp-Protocol-Version", tc.version)
			}
			if tc.method == http.MethodDelete {
				req.Header.Set(hdrSession, "sess-review28")
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			mu.Lock()
			got := reached
			mu.Unlock()
			if res.StatusCode != http.StatusOK || len(got) != tc.want {
				t.Errorf("own client %v, %s %s: %d %s; the downstream got %q, want %d requests; its log:\n%s",
					own, tc.method, tc.body, res.StatusCode, b, got, tc.want, logs.String())
			}
			for _, r := range got {
				if !strings.HasPrefix(r, tc.method+" viewer ") {
					t.Errorf("the downstream got %q", r)
				}
			}
		}
		gw.Close()
	}
	res, err := http.Post(down.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a direct request: %d, want 401", res.StatusCode)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// BenchmarkReview28ServeHTTPSigned is BenchmarkServeHTTP with a Signer.
func BenchmarkReview28ServeHTTPSigned(b *testing.B) {
	signer, err := token.NewGatewaySigner(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		b.Fatal(err)
	}
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: staticTransport{}, Signer: signer,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	body := echoCall
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if status := benchServe(g, body); status != http.StatusOK {
				b.Fatalf("status %d", status)
			}
		}
	})
}
