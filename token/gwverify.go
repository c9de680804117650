package token

import (
	"bytes"
	"container/heap"
	"encoding/hex"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GatewayVerifyOptions configures [GatewaySigner.Verify]. A nil
// *GatewayVerifyOptions means all defaults.
type GatewayVerifyOptions struct {
	// MaxSkew is how far a signature's time may be from the downstream's
	// clock, either way, and how long its signature is remembered to
	// refuse a replay. Zero (or negative) means 60 seconds. Times are
	// whole seconds (a signature's time is cut to its second, and MaxSkew
	// rounded up to one): a signature is accepted up to about a second
	// longer than MaxSkew after it was made.
	MaxSkew time.Duration
	// MaxBodyBytes caps the body read to check its digest; a request
	// with a longer body is refused (413). Zero (or negative) means 4 MiB, the
	// gateway's default MaxBodyBytes.
	MaxBodyBytes int64
	// MaxRemembered caps the signatures remembered at once (each for
	// about MaxSkew past its time). A signature is never forgotten while
	// it could still be accepted: when the cap is reached, requests are
	// refused (503) until remembered ones expire. Zero (or negative) means 262144
	// (2,000 requests a second for two minutes; about 37 MB).
	MaxRemembered int
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Logger receives a warning for every refusal, with its reason and
	// the caller's address, never a header value. Nil means
	// slog.Default().
	Logger *slog.Logger
}

// Verify returns a handler that passes on to next only a request signed by
// the gateway with one of s's keys ([GatewaySigner.Sign]): a
// [HeaderSignature] naming a time within MaxSkew of now and a MAC of the
// request's method, its target (http.Request.RequestURI), its body, its
// [HeaderSubject], [HeaderRole] and [HeaderRequestID] and its Mcp-Session-Id
// (the session the gateway let the principal use), and a signature not seen
// before (a replay is refused, however soon). The body is read (at most
// MaxBodyBytes) and given to next unchanged. A request without a signature
// is refused too: Verify is for a downstream server that only the gateway
// calls, and in front of [github.com/mcpguard/mcpguard.FromGatewayHeaders]
// it makes that authenticator sound on a network others can reach. Refused
// too is a request with one of those headers twice, or with another header
// in the X-Mcp-Gateway- namespace, or Mcp-Session-Id, spelled with
// underscores (which some servers read as dashes): the gateway sends none.
// A refusal is a JSON-RPC error (-32000) with 401; a body over the cap is
// answered with 413 (-32600), a full replay memory with 503 (-32603). The
// handler is safe for concurrent use; its replay memory is its own, so
// replicas behind a load balancer each keep one (a replay sent to another
// replica within MaxSkew is not refused: pin gateway connections to one
// replica, or keep MaxSkew short). Nor does it outlive the process: a
// signature timed before the second in which Verify was called is
// refused, as one a run before a restart may have accepted (a gateway
// whose clock is behind the downstream's has its requests refused for
// that long after the start); one timed in that second, or ahead of the
// downstream's clock (a gateway's clock ahead of it), which a run before a
// restart may have accepted, is not. A downstream whose calls must not
// run twice keeps MaxSkew short, or keeps an idempotency key of its own
// (a client's, remembered). A request signed for one downstream verifies
// at every other downstream that holds the same key (the signature names
// no downstream): give each downstream, and the gateway in front of it, a
// key of its own.
func (s *GatewaySigner) Verify(next http.Handler, opts *GatewayVerifyOptions) http.Handler {
	v := &gwVerifier{s: s, next: next, skew: 60 * time.Second, maxBody: 4 << 20, maxSeen: 1 << 18,
		now: time.Now, log: slog.Default(), seen: make(map[[32]byte]int64)}
	if opts != nil {
		if opts.MaxSkew > 0 {
			v.skew = opts.MaxSkew
		}
		if opts.MaxBodyBytes > 0 {
			v.maxBody = opts.MaxBodyBytes
		}
		if opts.MaxRemembered > 0 {
			v.maxSeen = opts.MaxRemembered
		}
		if opts.Now != nil {
			v.now = opts.Now
		}
		if opts.Logger != nil {
			v.log = opts.Logger
		}
	}
	v.skewSec = int64(v.skew / time.Second) // rounded up, without overflow
	if v.skew%time.Second != 0 {
		v.skewSec++
	}
	v.started = v.now().Unix()
	return v
}

type gwVerifier struct {
	s       *GatewaySigner
	next    http.Handler
	skew    time.Duration
	skewSec int64 // skew in whole seconds, rounded up
	// started is the time, in unix seconds, Verify made the handler: a
	// signature timed before it may have been accepted by the process
	// before a restart, whose replay memory is gone.
	started int64
	maxBody int64
	maxSeen int
	now     func() time.Time
	log     *slog.Logger

	mu sync.Mutex
	// seen maps each accepted MAC to its expiry, in unix seconds: the
	// last second its signature's time is within the skew.
	seen  map[[32]byte]int64
	queue gwHeap
	// forgotten is the latest expiry of a MAC forgotten so far: a
	// signature expiring no later may have been accepted and forgotten,
	// so it is refused whatever the clock says (it steps back, say).
	forgotten int64
	peak      int
}

const (
	gwUnauthorized = iota
	gwTooLarge
	gwFull
)

func (v *gwVerifier) refuse(w http.ResponseWriter, r *http.Request, kind int, reason string) {
	v.log.Warn("gateway signature refused", "reason", reason, "method", r.Method, "remote", r.RemoteAddr)
	status, code, msg := http.StatusUnauthorized, -32000, "Unauthorized: no valid gateway signature"
	switch kind {
	case gwTooLarge:
		status, code, msg = http.StatusRequestEntityTooLarge, -32600, "Invalid Request: body exceeds "+strconv.FormatInt(v.maxBody, 10)+" bytes"
	case gwFull:
		status, code, msg = http.StatusServiceUnavailable, -32603, "Service Unavailable: too many recent requests"
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":`+strconv.Itoa(code)+`,"message":"`+msg+`"}}`)
}

func (v *gwVerifier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sigs := r.Header[HeaderSignature]
	if len(sigs) != 1 {
		v.refuse(w, r, gwUnauthorized, "no signature, or more than one")
		return
	}
	if !soleGatewayHeaders(r.Header) {
		v.refuse(w, r, gwUnauthorized, "a signed header twice, or an unknown X-Mcp-Gateway- header")
		return
	}
	t, nonce, mac, ok := parseGatewaySignature(sigs[0])
	if !ok {
		v.refuse(w, r, gwUnauthorized, "malformed signature")
		return
	}
	ts, _ := strconv.ParseInt(t, 10, 64) // parse checked its digits
	now := v.now().Unix()
	if ts < now-v.skewSec || ts > now+v.skewSec {
		v.refuse(w, r, gwUnauthorized, "signature time out of range")
		return
	}
	if ts < v.started {
		v.refuse(w, r, gwUnauthorized, "signed before this server started (a run before may have seen it)")
		return
	}
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		if r.ContentLength > v.maxBody {
			v.refuse(w, r, gwTooLarge, "body too large")
			return
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, v.maxBody+1))
		if err != nil {
			v.refuse(w, r, gwUnauthorized, "body unreadable")
			return
		}
		if int64(len(b)) > v.maxBody {
			v.refuse(w, r, gwTooLarge, "body too large")
			return
		}
		body = b
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	target := r.RequestURI
	if target == "" {
		target = r.URL.RequestURI()
	}
	h := r.Header
	if !v.s.verify(mac[:], []byte(t), []byte(nonce), r.Method, target,
		first(h[HeaderSubject]), first(h[HeaderRole]), first(h[HeaderRequestID]), first(h[headerSession]), body) {
		v.refuse(w, r, gwUnauthorized, "bad signature")
		return
	}
	switch v.remember(mac, ts+v.skewSec, now) {
	case gwReplay:
		v.refuse(w, r, gwUnauthorized, "replayed signature")
		return
	case gwFullMemory:
		v.refuse(w, r, gwFull, "replay memory full")
		return
	}
	v.next.ServeHTTP(w, r)
}

// soleGatewayHeaders reports whether h has at most one value of each of
// the gateway's headers and of Mcp-Session-Id, no other header in the
// gateway's namespace and no Mcp-Session-Id spelled with underscores (which
// some servers read as dashes).
func soleGatewayHeaders(h http.Header) bool {
	for k, vs := range h {
		if len(k) == len(headerSession) && strings.EqualFold(strings.ReplaceAll(k, "_", "-"), headerSession) {
			if k != headerSession || len(vs) > 1 {
				return false
			}
			continue
		}
		if len(k) < len("x-mcp-gateway-") || !strings.EqualFold(strings.ReplaceAll(k[:len("x-mcp-gateway-")], "_", "-"), "x-mcp-gateway-") {
			continue
		}
		switch k {
		case HeaderSubject, HeaderRole, HeaderRequestID, HeaderSignature:
			if len(vs) > 1 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// parseGatewaySignature splits "t=<digits>,n=<32 hex>,v1=<64 hex>".
func parseGatewaySignature(v string) (t, nonce string, mac [32]byte, ok bool) {
	rest, found := strings.CutPrefix(v, "t=")
	if !found {
		return
	}
	t, rest, found = strings.Cut(rest, ",n=")
	if !found || len(t) == 0 || len(t) > 18 || strings.IndexFunc(t, notDigit) >= 0 || (len(t) > 1 && t[0] == '0') {
		return
	}
	nonce, rest, found = strings.Cut(rest, ",v1=")
	if !found || len(nonce) != 32 || !lowerHex(nonce) || len(rest) != 64 || !lowerHex(rest) {
		return
	}
	if _, err := hex.Decode(mac[:], []byte(rest)); err != nil {
		return
	}
	return t, nonce, mac, true
}

func notDigit(r rune) bool { return r < '0' || r > '9' }

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

const (
	gwFirst = iota
	gwReplay
	gwFullMemory
)

// remember records mac as accepted until expires (unix seconds) and says
// whether it was its first use, forgetting the MACs expired by now first.
func (v *gwVerifier) remember(mac [32]byte, expires, now int64) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	for len(v.queue) > 0 && v.queue[0].expires < now {
		e := heap.Pop(&v.queue).(gwEntry)
		delete(v.seen, e.mac)
		v.forgotten = max(v.forgotten, e.expires)
	}
	if c := cap(v.queue); c > 1024 && len(v.queue) < c/4 {
		v.queue = append(make(gwHeap, 0, c/2), v.queue...)
	}
	if n := len(v.seen); v.peak > 1024 && n <= v.peak/4 {
		seen := make(map[[32]byte]int64, n)
		maps.Copy(seen, v.seen)
		v.seen, v.peak = seen, n
	}
	if expires <= v.forgotten {
		return gwReplay
	}
	if _, ok := v.seen[mac]; ok {
		return gwReplay
	}
	if len(v.seen) >= v.maxSeen {
		return gwFullMemory
	}
	v.seen[mac] = expires
	v.peak = max(v.peak, len(v.seen))
	heap.Push(&v.queue, gwEntry{mac: mac, expires: expires})
	return gwFirst
}

type gwEntry struct {
	mac     [32]byte
	expires int64
}

// gwHeap is a min-heap of entries by expiry.
type gwHeap []gwEntry

func (h gwHeap) Len() int           { return len(h) }
func (h gwHeap) Less(i, j int) bool { return h[i].expires < h[j].expires }
func (h gwHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *gwHeap) Push(x any)        { *h = append(*h, x.(gwEntry)) }
func (h *gwHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
