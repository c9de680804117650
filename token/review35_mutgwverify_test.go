package token

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// review35Signer is a GatewaySigner with a fixed test key.
func review35Signer(t *testing.T) *GatewaySigner {
	t.Helper()
	s, err := NewGatewaySigner(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// review35Request is a POST of body to /mcp as the gateway sends it, signed by s at at.
func review35Request(s *GatewaySigner, at time.Time, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Header.Set(HeaderSubject, "ann")
	r.Header.Set(HeaderRole, "support")
	r.Header.Set(HeaderRequestID, "rid-1")
	s.Sign(r.Header, at, r.Method, r.RequestURI, []byte(body))
	return r
}

// review35Next counts the requests Verify passes on.
type review35Next struct{ calls int }

func (n *review35Next) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.calls++
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
	}
	w.WriteHeader(http.StatusNoContent)
}

// TestReview35GatewayVerifyRefusalAnswers pins what a refused caller sees for each kind of
// refusal (status, JSON-RPC error code and message, no caching) and that every refusal is
// logged as a warning with its reason and the caller's address.
func TestReview35GatewayVerifyRefusalAnswers(t *testing.T) {
	now := time.Unix(1767225600, 0)
	s := review35Signer(t)
	tests := []struct {
		name   string
		send   []func() *http.Request // all but the last must pass
		status int
		body   string
		reason string
	}{
		{"unsigned", []func() *http.Request{func() *http.Request {
			return httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
		}}, 401, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,` +
			`"message":"Unauthorized: no valid gateway signature"}}`, "no signature"},
		{"too_large", []func() *http.Request{func() *http.Request {
			return review35Request(s, now, "0123456789a")
		}}, 413, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,` +
			`"message":"Invalid Request: body exceeds 10 bytes"}}`, "body too large"},
		{"memory_full", []func() *http.Request{
			func() *http.Request { return review35Request(s, now, "{}") },
			func() *http.Request { return review35Request(s, now, "{}") },
			func() *http.Request { return review35Request(s, now, "{}") },
		}, 503, `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,` +
			`"message":"Service Unavailable: too many recent requests"}}`, "replay memory full"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			next := &review35Next{}
			h := s.Verify(next, &GatewayVerifyOptions{Now: func() time.Time { return now }, MaxBodyBytes: 10,
				MaxRemembered: 2, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			var w *httptest.ResponseRecorder
			for i, req := range tc.send {
				w = httptest.NewRecorder()
				r := req()
				r.RemoteAddr = "192.0.2.9:4242"
				h.ServeHTTP(w, r)
				if i < len(tc.send)-1 && w.Code != 204 {
					t.Fatalf("request %d: status %d, want 204", i, w.Code)
				}
			}
			if w.Code != tc.status || w.Body.String() != tc.body {
				t.Errorf("answer %d %s, want %d %s", w.Code, w.Body, tc.status, tc.body)
			}
			if next.calls != len(tc.send)-1 {
				t.Errorf("next ran %d times, want %d", next.calls, len(tc.send)-1)
			}
			if ct, cc := w.Header().Get("Content-Type"), w.Header().Get("Cache-Control"); ct != "application/json" || cc != "no-store" {
				t.Errorf("Content-Type %q, Cache-Control %q; want application/json, no-store", ct, cc)
			}
			log := logs.String()
			for _, want := range []string{"level=WARN", tc.reason, "remote=192.0.2.9:4242"} {
				if !strings.Contains(log, want) {
					t.Errorf("log %q lacks %q", log, want)
				}
			}
		})
	}
}

// TestReview35GatewayVerifySmallOptions pins that the smallest positive option values are
// honoured, not taken for "use the default", and that MaxSkew rounds up to whole seconds.
func TestReview35GatewayVerifySmallOptions(t *testing.T) {
	now := time.Unix(1767225600, 0)
	s := review35Signer(t)
	tests := []struct {
		name   string
		opts   GatewayVerifyOptions
		reqs   []*http.Request
		status []int
	}{
		{"skew_1ns_is_1s", GatewayVerifyOptions{MaxSkew: 1},
			[]*http.Request{review35Request(s, now.Add(-time.Second), "{}"), review35Request(s, now.Add(time.Second), "{}"),
				review35Request(s, now.Add(-2*time.Second), "{}"), review35Request(s, now.Add(2*time.Second), "{}")},
			[]int{204, 204, 401, 401}},
		{"skew_1500ms_is_2s", GatewayVerifyOptions{MaxSkew: 1500 * time.Millisecond},
			[]*http.Request{review35Request(s, now.Add(-2*time.Second), "{}"), review35Request(s, now.Add(2*time.Second), "{}"),
				review35Request(s, now.Add(-3*time.Second), "{}"), review35Request(s, now.Add(3*time.Second), "{}")},
			[]int{204, 204, 401, 401}},
		{"default_skew_edges", GatewayVerifyOptions{},
			[]*http.Request{review35Request(s, now.Add(-60*time.Second), "{}"), review35Request(s, now.Add(60*time.Second), "{}"),
				review35Request(s, now.Add(-61*time.Second), "{}"), review35Request(s, now.Add(61*time.Second), "{}")},
			[]int{204, 204, 401, 401}},
		{"body_1", GatewayVerifyOptions{MaxBodyBytes: 1},
			[]*http.Request{review35Request(s, now, "a"), review35Request(s, now, "ab")},
			[]int{204, 413}},
		{"remembered_1", GatewayVerifyOptions{MaxRemembered: 1},
			[]*http.Request{review35Request(s, now, "{}"), review35Request(s, now, "{}")},
			[]int{204, 503}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			clock := now.Add(-time.Hour) // started before every signature's time
			opts.Now = func() time.Time { return clock }
			opts.Logger = slog.New(slog.DiscardHandler)
			h := s.Verify(&review35Next{}, &opts)
			clock = now
			for i, r := range tc.reqs {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != tc.status[i] {
					t.Errorf("request %d: status %d, want %d", i, w.Code, tc.status[i])
				}
			}
		})
	}
}

// TestReview35GatewayVerifyDefaults pins the documented defaults, for a nil
// *GatewayVerifyOptions and for negative values: a 4 MiB body cap (checked by sending one),
// 60 seconds of skew and 262144 remembered signatures (checked on the handler: filling the
// memory would take too long).
func TestReview35GatewayVerifyDefaults(t *testing.T) {
	s := review35Signer(t)
	negative := &GatewayVerifyOptions{MaxSkew: -1, MaxBodyBytes: -1, MaxRemembered: -1,
		Logger: slog.New(slog.DiscardHandler)}
	h := s.Verify(&review35Next{}, negative)
	for _, tc := range []struct {
		size   int
		status int
	}{{4 << 20, 204}, {4<<20 + 1, 413}} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, review35Request(s, time.Now(), strings.Repeat("x", tc.size)))
		if w.Code != tc.status {
			t.Errorf("body of %d bytes: status %d, want %d", tc.size, w.Code, tc.status)
		}
		if tc.status == 413 && !strings.Contains(w.Body.String(), "body exceeds 4194304 bytes") {
			t.Errorf("body of %d bytes: answer %s", tc.size, w.Body)
		}
	}
	for _, opts := range []*GatewayVerifyOptions{nil, negative} {
		v := s.Verify(&review35Next{}, opts).(*gwVerifier)
		if v.skew != 60*time.Second || v.skewSec != 60 || v.maxBody != 4<<20 || v.maxSeen != 262144 {
			t.Errorf("defaults: skew %v (%d s), maxBody %d, maxSeen %d", v.skew, v.skewSec, v.maxBody, v.maxSeen)
		}
	}
}

// review35ErrBody is a request body whose read fails.
type review35ErrBody struct{}

func (review35ErrBody) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
func (review35ErrBody) Close() error             { return nil }

// TestReview35GatewayVerifyBodies pins how Verify treats a request's body: none at all (a nil
// Body, as an in-process caller may send) is an empty one, and a body that cannot be read is
// refused with 401 without calling next.
func TestReview35GatewayVerifyBodies(t *testing.T) {
	now := time.Unix(1767225600, 0)
	s := review35Signer(t)
	tests := []struct {
		name   string
		body   func(r *http.Request)
		status int
	}{
		{"nil_body", func(r *http.Request) { r.Body = nil; r.ContentLength = 0 }, 204},
		{"no_body", func(r *http.Request) { r.Body = http.NoBody; r.ContentLength = 0 }, 204},
		{"unreadable", func(r *http.Request) { r.Body = review35ErrBody{}; r.ContentLength = -1 }, 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := &review35Next{}
			h := s.Verify(next, &GatewayVerifyOptions{Now: func() time.Time { return now },
				Logger: slog.New(slog.DiscardHandler)})
			r := review35Request(s, now, "")
			tc.body(r)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status || (next.calls == 1) != (tc.status == 204) {
				t.Errorf("status %d, next ran %d times; want %d", w.Code, next.calls, tc.status)
			}
		})
	}
}

// TestReview35GatewayVerifyOtherHeaders pins which headers besides the signed ones Verify
// lets through: ordinary ones of any length are fine, but any other name in the
// X-Mcp-Gateway- namespace (even the bare prefix, or a spelling not canonical) is refused.
func TestReview35GatewayVerifyOtherHeaders(t *testing.T) {
	now := time.Unix(1767225600, 0)
	s := review35Signer(t)
	tests := []struct {
		name   string
		key    string
		status int
	}{
		{"short", "Te", 204},
		{"ordinary", "Accept", 204},
		{"same_length_as_session", "Accept-Charset", 204},
		{"same_length_as_prefix", "X-Mcp-Gatewayz", 204},
		{"prefix_without_dash", "X-Mcp-Gateway", 204},
		{"session_longer", "Mcp-Session-Idx", 204},
		{"bare_prefix", "X-Mcp-Gateway-", 401},
		{"unknown_in_namespace", "X-Mcp-Gateway-Tenant", 401},
		{"not_canonical", "x-mcp-gateway-subject", 401},
		{"session_not_canonical", "mcp-session-id", 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := &review35Next{}
			h := s.Verify(next, &GatewayVerifyOptions{Now: func() time.Time { return now },
				Logger: slog.New(slog.DiscardHandler)})
			r := review35Request(s, now, "{}")
			r.Header[tc.key] = []string{"x"}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status || (next.calls == 1) != (tc.status == 204) {
				t.Errorf("header %q: status %d, next ran %d times; want %d", tc.key, w.Code, next.calls, tc.status)
			}
		})
	}
}

// TestReview35GatewaySignatureFormat pins the documented header grammar,
// "t=<unix seconds>,n=<32 hex digits>,v1=<64 hex digits>" with lowercase hex, as the
// verifier parses it: t is decimal digits without a sign or a leading zero (18 at most),
// and anything else is refused.
func TestReview35GatewaySignatureFormat(t *testing.T) {
	const (
		n  = "0123456789abcdef0123456789abcdef"
		v1 = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	)
	sig := func(t, n, v1 string) string { return "t=" + t + ",n=" + n + ",v1=" + v1 }
	type test struct {
		name string
		in   string
		ok   bool
	}
	tests := []test{
		{"valid", sig("1767225600", n, v1), true},
		{"t_zero", sig("0", n, v1), true},
		{"t_ten", sig("10", n, v1), true},
		{"t_18_digits", sig("999999999999999999", n, v1), true},
		{"t_19_digits", sig("1000000000000000000", n, v1), false},
		{"t_empty", sig("", n, v1), false},
		{"t_leading_zero", sig("01767225600", n, v1), false},
		{"t_01", sig("01", n, v1), false},
		{"t_signed", sig("+1767225600", n, v1), false},
		{"t_negative", sig("-1", n, v1), false},
		{"t_letter_inside", sig("17672a5600", n, v1), false},
		{"t_letters", sig("abc", n, v1), false},
		{"no_t", "n=" + n + ",v1=" + v1, false},
		{"t_upper", "T=1767225600,n=" + n + ",v1=" + v1, false},
		{"no_n", "t=1767225600,v1=" + v1, false},
		{"n_31", sig("1767225600", n[1:], v1), false},
		{"n_33", sig("1767225600", n+"0", v1), false},
		{"n_upper", sig("1767225600", strings.ToUpper(n), v1), false},
		{"no_v1", "t=1767225600,n=" + n, false},
		{"v1_63", sig("1767225600", n, v1[1:]), false},
		{"v1_65", sig("1767225600", n, v1+"0"), false},
		{"v1_66", sig("1767225600", n, v1+"00"), false},
		{"v1_upper", sig("1767225600", n, strings.ToUpper(v1)), false},
		{"v1_trailing", sig("1767225600", n, v1) + ",v2=00", false},
	}
	// Every byte next to a hex digit range, in the nonce and in the MAC.
	for _, c := range "/:`gAF" {
		tests = append(tests, test{"n_" + string(c), sig("1767225600", n[:31]+string(c), v1), false},
			test{"v1_" + string(c), sig("1767225600", n, string(c)+v1[1:]), false})
	}
	for _, c := range "09af" {
		tests = append(tests, test{"hex_" + string(c), sig("1767225600", string(c)+n[1:], v1[:63]+string(c)), true})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts, nonce, mac, ok := parseGatewaySignature(tc.in)
			if ok != tc.ok {
				t.Fatalf("parseGatewaySignature(%q): ok %v, want %v", tc.in, ok, tc.ok)
			}
			if ok && "t="+ts+",n="+nonce+",v1="+hex.EncodeToString(mac[:]) != tc.in {
				t.Errorf("parseGatewaySignature(%q) = %q, %q, %x", tc.in, ts, nonce, mac)
			}
		})
	}
}

// TestReview35GatewayVerifyUppercaseMAC pins that a signature whose MAC is the right one
// written in uppercase hex is refused: the format allows one spelling of each signature.
func TestReview35GatewayVerifyUppercaseMAC(t *testing.T) {
	now := time.Unix(1767225600, 0)
	s := review35Signer(t)
	next := &review35Next{}
	h := s.Verify(next, &GatewayVerifyOptions{Now: func() time.Time { return now },
		Logger: slog.New(slog.DiscardHandler)})
	r := review35Request(s, now, "{}")
	v := r.Header.Get(HeaderSignature)
	i := strings.Index(v, ",v1=") + len(",v1=")
	r.Header.Set(HeaderSignature, v[:i]+strings.ToUpper(v[i:]))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 401 || next.calls != 0 {
		t.Errorf("uppercase MAC: status %d, next ran %d times; want a 401 refusal", w.Code, next.calls)
	}
}

// TestReview35GatewayVerifyMemoryExpiry pins how the replay memory ages: a signature is
// forgotten only once its time is out of the skew, so a full memory frees itself, and a
// fresh signature at the edge of the skew is still accepted when older ones are forgotten
// in the same second, while a forgotten one stays refused even if the clock steps back.
func TestReview35GatewayVerifyMemoryExpiry(t *testing.T) {
	t0 := time.Unix(1767225600, 0)
	s := review35Signer(t)
	clock := t0
	var logs bytes.Buffer
	h := s.Verify(&review35Next{}, &GatewayVerifyOptions{MaxRemembered: 2, Now: func() time.Time { return clock },
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	steps := []struct {
		clock, signed time.Time
		status        int
	}{
		{t0, t0, 204},
		{t0, t0, 204},
		{t0, t0, 503},                       // full
		{t0.Add(60 * time.Second), t0, 503}, // both still live
		{t0.Add(61 * time.Second), t0.Add(61 * time.Second), 204}, // both forgotten
		{t0.Add(61 * time.Second), t0.Add(time.Second), 204},      // at the skew's edge
	}
	var first string
	for i, st := range steps {
		clock = st.clock
		r := review35Request(s, st.signed, "{}")
		if i == 0 {
			first = r.Header.Get(HeaderSignature)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != st.status {
			t.Errorf("step %d: status %d, want %d", i, w.Code, st.status)
		}
	}
	// The first signature is forgotten now; with the clock stepped back into its skew, a
	// replay of it is still refused as one.
	clock = t0.Add(30 * time.Second)
	r := review35Request(s, t0, "{}")
	r.Header.Set(HeaderSignature, first)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 401 || !strings.Contains(logs.String(), "replayed signature") {
		t.Errorf("replay of a forgotten signature: status %d, want 401 for a replay (log %q)", w.Code, logs.String())
	}
}

// TestReview35GatewayVerifyReclaimKeepsLive pins that when the replay memory is given back
// after a burst of requests, the signatures still within the skew stay remembered (a
// replay of one is refused) and the memory shrinks.
func TestReview35GatewayVerifyReclaimKeepsLive(t *testing.T) {
	t0 := time.Unix(1767225600, 0)
	s := review35Signer(t)
	clock := t0
	h := s.Verify(&review35Next{}, &GatewayVerifyOptions{Now: func() time.Time { return clock },
		Logger: slog.New(slog.DiscardHandler)})
	send := func(r *http.Request) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for i := range 2000 {
		if c := send(review35Request(s, t0, "{}")); c != 204 {
			t.Fatalf("burst request %d: status %d", i, c)
		}
	}
	clock = t0.Add(30 * time.Second)
	live := review35Request(s, clock, "{}")
	sig := live.Header.Get(HeaderSignature)
	if c := send(live); c != 204 {
		t.Fatalf("live request: status %d", c)
	}
	clock = t0.Add(61 * time.Second) // the burst expires; the next request reclaims
	if c := send(review35Request(s, clock, "{}")); c != 204 {
		t.Fatalf("request after the burst: status %d", c)
	}
	replay := review35Request(s, t0, "{}")
	replay.Header.Set(HeaderSignature, sig)
	replay.Header.Set(HeaderRequestID, live.Header.Get(HeaderRequestID))
	if c := send(replay); c != 401 {
		t.Errorf("replay of a live signature after the reclaim: status %d, want 401", c)
	}
	v := h.(*gwVerifier)
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.seen) != 2 || v.peak > 2 || cap(v.queue) > 1024 {
		t.Errorf("after the reclaim: %d remembered, peak %d, queue capacity %d; want 2, <= 2, <= 1024",
			len(v.seen), v.peak, cap(v.queue))
	}
}

// TestReview35GatewayVerifyLastOneForgotten pins that a full memory of one signature frees
// itself once that signature is out of the skew, even with no other one remembered.
func TestReview35GatewayVerifyLastOneForgotten(t *testing.T) {
	t0 := time.Unix(1767225600, 0)
	s := review35Signer(t)
	clock := t0
	h := s.Verify(&review35Next{}, &GatewayVerifyOptions{MaxRemembered: 1, Now: func() time.Time { return clock },
		Logger: slog.New(slog.DiscardHandler)})
	for i, at := range []time.Time{t0, t0.Add(61 * time.Second)} {
		clock = at
		w := httptest.NewRecorder()
		h.ServeHTTP(w, review35Request(s, at, "{}"))
		if w.Code != 204 {
			t.Errorf("request %d at %v: status %d, want 204", i, at.Sub(t0), w.Code)
		}
	}
}
