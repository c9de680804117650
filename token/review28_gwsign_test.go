package token_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

var (
	gwKey1 = bytes.Repeat([]byte{1}, 32)
	gwKey2 = bytes.Repeat([]byte{2}, 32)
)

func gwSigner(t *testing.T, key []byte, prev ...[]byte) *token.GatewaySigner {
	t.Helper()
	s, err := token.NewGatewaySigner(key, prev...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// gwRequest is a request as the gateway sends it, signed by s at at.
func gwRequest(s *token.GatewaySigner, at time.Time, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp?a=1", strings.NewReader(body))
	r.Header.Set(token.HeaderSubject, "ann")
	r.Header.Set(token.HeaderRole, "support")
	r.Header.Set(token.HeaderRequestID, "rid-1")
	s.Sign(r.Header, at, r.Method, r.RequestURI, []byte(body))
	return r
}

type gwNext struct {
	calls int
	body  string
}

func (n *gwNext) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.calls++
	b, _ := io.ReadAll(r.Body)
	n.body = string(b)
	w.WriteHeader(http.StatusNoContent)
}

func TestReview28NewGatewaySignerKeyLength(t *testing.T) {
	if _, err := token.NewGatewaySigner(make([]byte, 31)); err == nil {
		t.Error("NewGatewaySigner(31 bytes): no error")
	}
	if _, err := token.NewGatewaySigner(gwKey1, make([]byte, 8)); err == nil {
		t.Error("NewGatewaySigner(a short previous key): no error")
	}
}

func TestReview28GatewayVerify(t *testing.T) {
	now := time.Unix(1767225600, 0)
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	s := gwSigner(t, gwKey1)
	tests := []struct {
		name   string
		signer *token.GatewaySigner // verifying signer; nil: s
		req    func() *http.Request
		status int
	}{
		{"valid", nil, func() *http.Request { return gwRequest(s, now, body) }, 204},
		{"valid_skew_edge", nil, func() *http.Request { return gwRequest(s, now.Add(-60*time.Second), body) }, 204},
		{"missing", nil, func() *http.Request {
			r := gwRequest(s, now, body)
			r.Header.Del(token.HeaderSignature)
			return r
		}, 401},
		{"forged_key", nil, func() *http.Request { return gwRequest(gwSigner(t, gwKey2), now, body) }, 401},
		{"forged_mac", nil, func() *http.Request {
			r := gwRequest(s, now, body)
			v := r.Header.Get(token.HeaderSignature)
			last := "0"
			if v[len(v)-1] == '0' {
				last = "1"
			}
			r.Header.Set(token.HeaderSignature, v[:len(v)-1]+last)
			return r
		}, 401},
		{"stale", nil, func() *http.Request { return gwRequest(s, now.Add(-61*time.Second), body) }, 401},
		{"future", nil, func() *http.Request { return gwRequest(s, now.Add(61*time.Second), body) }, 401},
		{"body_swapped", nil, func() *http.Request {
			r := gwRequest(s, now, body)
			r.Body = io.NopCloser(strings.NewReader(strings.Replace(body, "list", "call", 1)))
			return r
		}, 401},
		{"target_swapped", nil, func() *http.Request {
			r := gwRequest(s, now, body)
			r.RequestURI = "/mcp?a=2"
			return r
		}, 401},
		{"method_swapped", nil, func() *http.Request {
			r := gwRequest(s, now, body)
			r.Method = http.MethodPut
			return r
		}, 401},
		{"subject_swapped", nil, func() *http.Request {
			r := gwRequest(s, now, body)
			r.Header.Set(token.HeaderSubject, "root")
			return r
		}, 401},
		{"role_swapped", nil, func() *http.Request {
			r := gwRequest(s, now, body)
			r.Header.Set(token.HeaderRole, "admin")
			return r
		}, 401},
		{"role_dropped", nil, func() *http.Request {
			r := gwRequest(s, now, body)
			r.Header.Del(token.HeaderRole)
			return r
		}, 401},
		{"id_swapped", nil, func() *http.Request {
			r := gwRequest(s, now, body)
			r.Header.Set(token.HeaderRequestID, "rid-2")
			return r
		}, 401},
		{"role_duplicated", nil, func() *http.Request {
			r := gwRequest(s, now, body)
			r.Header.Add(token.HeaderRole, "admin")
			return r
		}, 401},
		{"signature_duplicated", nil, func() *http.Request {
			r := gwRequest(s, now, body)
			r.Header.Add(token.HeaderSignature, r.Header.Get(token.HeaderSignature))
			return r
		}, 401},
		{"underscore_role", nil, func() *http.Request {
			r := gwRequest(s, now, body)
			r.Header["X_mcp_gateway_role"] = []string{"admin"}
			return r
		}, 401},
		{"malformed", nil, func() *http.Request {
			r := gwRequest(s, now, body)
			r.Header.Set(token.HeaderSignature, "t=1767225600,v1=00")
			return r
		}, 401},
		{"rotation_old_key_accepted", gwSigner(t, gwKey2, gwKey1), func() *http.Request { return gwRequest(s, now, body) }, 204},
		{"rotation_new_key_accepted", gwSigner(t, gwKey2, gwKey1), func() *http.Request { return gwRequest(gwSigner(t, gwKey2), now, body) }, 204},
		{"rotation_dropped_key", gwSigner(t, gwKey2), func() *http.Request { return gwRequest(s, now, body) }, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := tt.signer
			if vs == nil {
				vs = s
			}
			next := &gwNext{}
			var logs bytes.Buffer
			// Made an hour before now: no signature is timed before its
			// start (which a run before a restart may have seen).
			clock := now.Add(-time.Hour)
			h := vs.Verify(next, &token.GatewayVerifyOptions{Now: func() time.Time { return clock },
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			clock = now
			r := tt.req()
			sig := r.Header.Get(token.HeaderSignature)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.status {
				t.Fatalf("status = %d, want %d (%s)", w.Code, tt.status, w.Body)
			}
			if tt.status != 204 {
				if next.calls != 0 {
					t.Error("next ran on a refused request")
				}
				if !strings.Contains(w.Body.String(), `"code":-32000`) {
					t.Errorf("body = %s, want a -32000 error", w.Body)
				}
				if sig != "" && len(sig) > 20 && strings.Contains(logs.String(), sig[len(sig)-20:]) {
					t.Errorf("the log quotes the signature: %s", logs.String())
				}
				return
			}
			if next.body != body {
				t.Errorf("next read body %q, want %q", next.body, body)
			}
		})
	}
}

func TestReview28GatewayVerifyReplay(t *testing.T) {
	now := time.Unix(1767225600, 0)
	s := gwSigner(t, gwKey1)
	clock := now
	next := &gwNext{}
	h := s.Verify(next, &token.GatewayVerifyOptions{Now: func() time.Time { return clock }})
	r := gwRequest(s, now, "{}")
	send := func() int {
		r2 := r.Clone(r.Context())
		r2.Body = io.NopCloser(strings.NewReader("{}"))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r2)
		return w.Code
	}
	if c := send(); c != 204 {
		t.Fatalf("first: %d", c)
	}
	for _, d := range []time.Duration{0, 30 * time.Second, 60 * time.Second} {
		clock = now.Add(d)
		if c := send(); c != 401 {
			t.Errorf("replay %v later: %d, want 401", d, c)
		}
	}
	// Another request by the same signer with the same request id (a
	// batch's members share one) in the same second is not a replay.
	if w := httptest.NewRecorder(); true {
		h.ServeHTTP(w, gwRequest(s, clock, "{}"))
		if w.Code != 204 {
			t.Errorf("a second member: %d, want 204", w.Code)
		}
	}
	// Past the window, the entry is forgotten and the signature is stale;
	// a clock stepped back must not make it acceptable again.
	clock = now.Add(5 * time.Minute)
	h.ServeHTTP(httptest.NewRecorder(), gwRequest(s, clock, "{}"))
	clock = now
	if c := send(); c != 401 {
		t.Errorf("replay after a clock step back: %d, want 401", c)
	}
}

func TestReview28GatewayVerifyBounds(t *testing.T) {
	now := time.Unix(1767225600, 0)
	s := gwSigner(t, gwKey1)
	next := &gwNext{}
	h := s.Verify(next, &token.GatewayVerifyOptions{Now: func() time.Time { return now }, MaxBodyBytes: 10, MaxRemembered: 2})
	for _, tc := range []struct {
		body   string
		chunk  bool
		status int
	}{{"0123456789", false, 204}, {"0123456789a", false, 413}, {"0123456789a", true, 413}} {
		r := gwRequest(s, now, tc.body)
		if tc.chunk {
			r.ContentLength = -1
			r.Body = io.NopCloser(io.MultiReader(strings.NewReader(tc.body)))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.status {
			t.Errorf("body %q (chunked %v): %d, want %d", tc.body, tc.chunk, w.Code, tc.status)
		}
	}
	// One signature is remembered; the second fills the memory, the
	// third is refused, not let through by forgetting a live one.
	codes := []int{}
	for range 2 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, gwRequest(s, now, "{}"))
		codes = append(codes, w.Code)
	}
	if codes[0] != 204 || codes[1] != 503 {
		t.Errorf("codes = %v, want [204 503]", codes)
	}
}

func TestReview28GatewayVerifyConcurrentReplay(t *testing.T) {
	now := time.Now()
	s := gwSigner(t, gwKey1)
	var mu sync.Mutex
	passed := 0
	h := s.Verify(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		mu.Lock()
		passed++
		mu.Unlock()
	}), nil)
	r := gwRequest(s, now, "{}")
	var wg sync.WaitGroup
	for range 16 {
		r2 := r.Clone(r.Context())
		r2.Body = io.NopCloser(strings.NewReader("{}"))
		wg.Go(func() { h.ServeHTTP(httptest.NewRecorder(), r2) })
	}
	wg.Wait()
	if passed != 1 {
		t.Errorf("%d copies passed, want 1", passed)
	}
}
