package token

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// HeaderSignature is the header in which the gateway signs the identity it
// sends a downstream: see [GatewaySigner] and the package documentation's
// "Signed gateway identity" section for its format.
const HeaderSignature = "X-Mcp-Gateway-Signature"

// gwContext is the first field of every signed message: the scheme and its
// version, so that a MAC made under this key for anything else never
// verifies here.
const gwContext = "mcpguard-gateway-signature-v1"

// headerSession is the MCP session header: the gateway lets a principal use
// only the sessions it started, so the session a request runs in is signed
// with the identity.
const headerSession = "Mcp-Session-Id"

// MinGatewayKeyLen is the least number of bytes of a [GatewaySigner] key.
const MinGatewayKeyLen = 32

// A GatewaySigner signs the identity the gateway sends a downstream server
// (HMAC-SHA256 under a key the two share) and, on the downstream's side,
// verifies it ([GatewaySigner.Verify]). It holds one or more keys: it signs
// with the first and accepts a signature by any, so that a key can be
// rotated by giving downstreams the new key beside the old (in either
// order: a verifier accepts every key), then the gateway the new key, then
// dropping the old. Make one with [NewGatewaySigner]: the zero value signs
// nothing and verifies nothing. It is safe for concurrent use.
//
// It never prints its keys: [GatewaySigner.Format] prints
// [GatewaySigner.String] for every verb, and the keys are behind pointers
// (see hide), which fmt prints as addresses when it walks the fields of a
// GatewaySigner (a *GatewaySigner in an unexported field, printed).
type GatewaySigner struct {
	keys []*string // see hide
	// noncePrefix, drawn once, and seq make each signature's nonce: no
	// two requests one signer signs share one, and two signers (gateway
	// replicas) share one with a chance of 1 in 2^64.
	noncePrefix [8]byte
	seq         atomic.Uint64
	pools       []sync.Pool // per key: *gwMAC
}

// NewGatewaySigner returns a [GatewaySigner] that signs with key and
// accepts signatures by key or any of previous. Each key must be at least
// [MinGatewayKeyLen] bytes (random bytes: 32 from crypto/rand, written in
// hex where a configuration needs text). The keys are copied.
func NewGatewaySigner(key []byte, previous ...[]byte) (*GatewaySigner, error) {
	s := &GatewaySigner{}
	for _, k := range append([][]byte{key}, previous...) {
		if len(k) < MinGatewayKeyLen {
			return nil, errors.New("token: a gateway signing key must be at least " + strconv.Itoa(MinGatewayKeyLen) + " bytes")
		}
		s.keys = append(s.keys, hide(string(k)))
	}
	s.pools = make([]sync.Pool, len(s.keys))
	for i := range s.pools {
		k := s.keys[i]
		s.pools[i].New = func() any { return &gwMAC{h: hmac.New(sha256.New, []byte(*k))} }
	}
	_, _ = rand.Read(s.noncePrefix[:]) // never fails on the platforms Go supports
	return s, nil
}

// String describes s without its keys.
func (s *GatewaySigner) String() string {
	if s == nil {
		return "token.GatewaySigner(nil)"
	}
	return "token.GatewaySigner(" + strconv.Itoa(len(s.keys)) + " keys)"
}

// Format prints [GatewaySigner.String] for every verb, so that its keys
// are never printed.
func (s *GatewaySigner) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// gwMAC is a reusable HMAC state and the scratch space of one signature.
type gwMAC struct {
	h       hash.Hash
	buf     [8]byte
	sum     [sha256.Size]byte
	nonce   [32]byte
	out     [128]byte
	scratch []byte // a string field's bytes: Write takes a []byte
}

// Sign sets h's [HeaderSignature] to a signature, made at now, of method,
// target (the request target as sent: the URL's path and query, as
// url.URL.RequestURI gives it), body (the exact bytes sent; nil for none)
// and the first values of h's [HeaderSubject], [HeaderRole],
// [HeaderRequestID] and Mcp-Session-Id (empty when absent). Call it once the
// header is final: a downstream that verifies refuses a request whose signed
// parts changed.
func (s *GatewaySigner) Sign(h http.Header, now time.Time, method, target string, body []byte) {
	if len(s.pools) == 0 {
		return // the zero value: no key
	}
	m := s.pools[0].Get().(*gwMAC)
	hex.Encode(m.nonce[:16], s.noncePrefix[:])
	binary.BigEndian.PutUint64(m.buf[:], s.seq.Add(1))
	hex.Encode(m.nonce[16:], m.buf[:])
	h[HeaderSignature] = []string{m.sign(now.Unix(), m.nonce[:], method, target, first(h[HeaderSubject]),
		first(h[HeaderRole]), first(h[HeaderRequestID]), first(h[headerSession]), body)}
	s.pools[0].Put(m)
}

func first(v []string) string {
	if len(v) > 0 {
		return v[0]
	}
	return ""
}

// sign returns the header value "t=<t>,n=<nonce>,v1=<hex MAC>" under m's
// key.
func (m *gwMAC) sign(t int64, nonce []byte, method, target, sub, role, rid, sid string, body []byte) string {
	out := m.out[:0]
	out = append(out, "t="...)
	ts := len(out)
	out = strconv.AppendInt(out, t, 10)
	te := len(out)
	out = append(out, ",n="...)
	out = append(out, nonce...)
	out = append(out, ",v1="...)
	mac := m.mac(out[ts:te], nonce, method, target, sub, role, rid, sid, body)
	out = hex.AppendEncode(out, mac)
	return string(out)
}

// mac returns the HMAC of the signed message, in m's scratch space: every
// field as its length (4 bytes, big-endian) and its bytes.
func (m *gwMAC) mac(t, nonce []byte, method, target, sub, role, rid, sid string, body []byte) []byte {
	m.h.Reset()
	m.field(gwContext)
	m.fieldBytes(t)
	m.fieldBytes(nonce)
	m.field(method)
	m.field(target)
	m.field(sub)
	m.field(role)
	m.field(rid)
	m.field(sid)
	m.sum = sha256.Sum256(body)
	m.fieldBytes(m.sum[:])
	return m.h.Sum(m.sum[:0])
}

func (m *gwMAC) field(s string) {
	binary.BigEndian.PutUint32(m.buf[:4], uint32(len(s)))
	m.h.Write(m.buf[:4])
	// hash.Hash has no WriteString, and a []byte(s) given to Write
	// would be a copy on the heap each time.
	m.scratch = append(m.scratch[:0], s...)
	m.h.Write(m.scratch)
}

func (m *gwMAC) fieldBytes(b []byte) {
	binary.BigEndian.PutUint32(m.buf[:4], uint32(len(b)))
	m.h.Write(m.buf[:4])
	m.h.Write(b)
}

// verify reports whether mac is the MAC of the message under one of s's
// keys, comparing in constant time.
func (s *GatewaySigner) verify(mac []byte, t, nonce []byte, method, target, sub, role, rid, sid string, body []byte) bool {
	ok := false
	for k := range s.keys {
		m := s.pools[k].Get().(*gwMAC)
		if hmac.Equal(m.mac(t, nonce, method, target, sub, role, rid, sid, body), mac) {
			ok = true
		}
		s.pools[k].Put(m)
	}
	return ok
}
