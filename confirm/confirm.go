package confirm

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/internal/logsafe"
)

// DefaultTTL is how long a confirmation state stays valid when
// [Options].TTL is zero.
const DefaultTTL = 2 * time.Minute

// MinSecretLen is the minimum length in bytes of a [Key] secret.
const MinSecretLen = 32

// Errors returned by [Signer.Verify]. Every error Verify returns unwraps to
// exactly one of them with [errors.Is]. Their messages never contain keys,
// subjects or arguments.
var (
	// ErrMalformed: the state is not one this package issues (bad encoding,
	// wrong version, too long, truncated).
	ErrMalformed = errors.New("confirm: malformed confirmation state")
	// ErrUnknownKey: the state names a key id that is not configured (for
	// example a key removed after rotation).
	ErrUnknownKey = errors.New("confirm: confirmation signed with an unknown key")
	// ErrBadSignature: the state's signature does not match its content.
	ErrBadSignature = errors.New("confirm: confirmation signature invalid")
	// ErrExpired: the state's expiry has passed, or the time it is judged
	// at is not a clock reading: the zero time (a clock never set up) or
	// any time before 1970-01-01 00:00:01 UTC, at which no state is valid.
	ErrExpired = errors.New("confirm: confirmation expired")
	// ErrMismatch: the state was issued for another subject, tool or
	// arguments.
	ErrMismatch = errors.New("confirm: confirmation is for another caller, tool or arguments")
	// ErrReplayed: the state was already used.
	ErrReplayed = errors.New("confirm: confirmation already used")
	// ErrStore: the nonce store could not decide; the confirmation is refused.
	ErrStore = errors.New("confirm: nonce store unavailable")
)

// Claims are what a confirmation is bound to. All fields are required.
type Claims struct {
	// Subject identifies the authenticated caller.
	Subject string
	// Tool is the name of the tool to run.
	Tool string
	// ArgsSHA256 is the hex SHA-256 of the canonical arguments, as computed
	// by [ArgsSHA256].
	ArgsSHA256 string
}

// Key is an HMAC-SHA256 signing key.
type Key struct {
	// ID names the key inside every state it signs (1 to 64 bytes), so
	// verification can pick the right key during rotation.
	ID string
	// Secret is the HMAC key, at least [MinSecretLen] bytes from a
	// cryptographic random source.
	Secret []byte
}

// Options configures a [Signer]. A nil *Options means all defaults.
type Options struct {
	// TTL is how long an issued state is valid, at least one second. Zero
	// means [DefaultTTL].
	TTL time.Duration
	// Nonces remembers used nonces. Nil means a new [MemoryNonceStore].
	// [Ticket.Used] tells a used state only if it implements
	// [NonceChecker].
	Nonces NonceStore
	// Rand is the source of nonces. Nil means crypto/rand. Reads are
	// serialized, so it need not be safe for concurrent use.
	Rand io.Reader
}

// A Signer issues and verifies confirmation states. It is safe for
// concurrent use. The zero Signer is not usable (it has no key: its Issue
// returns an error, and it verifies nothing): make one with [NewSigner].
//
// It never prints its secrets: [Signer.Format] prints [Signer.String] for
// every verb (so does a slog text handler), and the secrets are held
// behind pointers to strings, which fmt prints as addresses whatever the
// verb, when it walks a Signer's fields (a Signer value, or a *Signer in
// an unexported field of a struct printed).
type Signer struct {
	signKID string
	signKey *string            // keys[signKID]
	keys    map[string]*string // by key id
	ttl     time.Duration
	nonces  NonceStore
	randMu  sync.Mutex
	rand    io.Reader
}

// NewSigner returns a Signer that signs with keys[0] and verifies with any
// of keys. It returns an error when keys is empty, a key id is empty, longer
// than 64 bytes or repeated, a secret is shorter than [MinSecretLen], the
// TTL is negative or under one second (states carry whole seconds),
// Nonces is a [MemoryNonceStore] not made by [NewMemoryNonceStore], or
// Nonces is a nil [NonceStoreFunc]. The keys and options are copied.
func NewSigner(keys []Key, opts *Options) (*Signer, error) {
	if len(keys) == 0 {
		return nil, errors.New("confirm: at least one key is required")
	}
	s := &Signer{keys: make(map[string]*string, len(keys)), ttl: DefaultTTL}
	for i, k := range keys {
		if k.ID == "" || len(k.ID) > maxKIDLen {
			return nil, fmt.Errorf("confirm: key %d: id must be 1 to %d bytes", i, maxKIDLen)
		}
		if len(k.Secret) < MinSecretLen {
			return nil, fmt.Errorf("confirm: key %q: secret must be at least %d bytes", k.ID, MinSecretLen)
		}
		if _, dup := s.keys[k.ID]; dup {
			return nil, fmt.Errorf("confirm: key id %q repeated", k.ID)
		}
		secret := string(k.Secret)
		s.keys[k.ID] = &secret
	}
	s.signKID = keys[0].ID
	s.signKey = s.keys[s.signKID]
	if opts != nil {
		if opts.TTL < 0 || (opts.TTL > 0 && opts.TTL < time.Second) {
			return nil, errors.New("confirm: TTL must be zero (default) or at least one second")
		}
		if opts.TTL > 0 {
			s.ttl = opts.TTL
		}
		s.nonces = opts.Nonces
		s.rand = opts.Rand
		if m, ok := s.nonces.(*MemoryNonceStore); ok && !m.made() {
			return nil, errUnmadeStore
		}
		if f, ok := s.nonces.(NonceStoreFunc); ok && f == nil {
			// Not the nil interface that asks for the default store:
			// every confirmation would be refused.
			return nil, errNilStoreFunc
		}
	}
	if s.nonces == nil {
		s.nonces = NewMemoryNonceStore()
	}
	return s, nil
}

// TTL reports how long states issued by s are valid: zero for a nil or
// zero Signer, which issues none.
func (s *Signer) TTL() time.Duration {
	if s == nil {
		return 0
	}
	return s.ttl
}

const (
	version      = 1
	nonceLen     = 16
	maxKIDLen    = 64
	maxStateLen  = 4096
	fixedLen     = 1 + 8 + nonceLen // version, expiry, nonce
	macLen       = sha256.Size
	maxExpiry    = 1 << 62 // the latest expiry a state can carry, in unix seconds
	domainPrefix = "mcpguard/confirm\x00"
)

// Issue returns a state bound to c that expires at now plus the TTL,
// rounded down to the whole second (the state carries unix seconds). It
// returns an error when a claim is empty, the claims are too long for a
// state (over about 4 KiB), the random source fails, or now is not a
// clock reading: the zero time, a time before 1970-01-01 00:00:01 UTC, or one so
// late that the expiry does not fit the state (such a state could never
// verify), and on a Signer not made by [NewSigner], which has no key.
func (s *Signer) Issue(now time.Time, c Claims) (string, error) {
	if s == nil || s.signKey == nil {
		return "", errUnusable
	}
	if c.Subject == "" || c.Tool == "" || c.ArgsSHA256 == "" {
		return "", errors.New("confirm: subject, tool and arguments hash are required")
	}
	exp := now.Add(s.ttl).Unix()
	if !clockReading(now) || exp <= 0 || exp > maxExpiry {
		return "", errors.New("confirm: the time given is not a clock reading (zero, before 1970 or out of range)")
	}
	var nonce [nonceLen]byte
	if err := s.readNonce(nonce[:]); err != nil {
		return "", fmt.Errorf("confirm: reading nonce: %w", err)
	}
	p := make([]byte, 0, fixedLen+1+len(s.signKID)+3*binary.MaxVarintLen16+len(c.Subject)+len(c.Tool)+len(c.ArgsSHA256))
	p = append(p, version)
	p = binary.BigEndian.AppendUint64(p, uint64(exp))
	p = append(p, nonce[:]...)
	p = append(p, byte(len(s.signKID)))
	p = append(p, s.signKID...)
	for _, f := range []string{c.Subject, c.Tool, c.ArgsSHA256} {
		p = binary.AppendUvarint(p, uint64(len(f)))
		p = append(p, f...)
	}
	enc := base64.RawURLEncoding
	n := enc.EncodedLen(len(p)) + 1 + enc.EncodedLen(macLen)
	if n > maxStateLen {
		return "", errors.New("confirm: claims too long for a confirmation state")
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(enc.EncodeToString(p))
	b.WriteByte('.')
	b.WriteString(enc.EncodeToString(mac([]byte(*s.signKey), p)))
	return b.String(), nil
}

// String describes s without its secrets: the number of its keys.
func (s *Signer) String() string {
	if s == nil {
		return "confirm.Signer(nil)"
	}
	return "confirm.Signer(" + strconv.Itoa(len(s.keys)) + " keys)"
}

// Format prints [Signer.String] for every verb, so that no secret of s is
// ever printed.
func (s *Signer) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

func (s *Signer) readNonce(b []byte) error {
	if s.rand == nil {
		_, err := rand.Read(b)
		return err
	}
	s.randMu.Lock()
	defer s.randMu.Unlock()
	_, err := io.ReadFull(s.rand, b)
	return err
}

// clockReading reports whether now can be a reading of a working clock: at
// or after 1970-01-01 00:00:01 UTC (a whole second after the epoch, as the
// state counts time), so not the zero time. An earlier time is before
// every expiry a state carries, and would make every state, however long
// expired, valid.
func clockReading(now time.Time) bool { return now.Unix() > 0 }

func mac(key, payload []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(domainPrefix))
	h.Write(payload)
	return h.Sum(nil)
}

// payload is a decoded state payload.
type payload struct {
	expires int64
	nonce   []byte
	kid     string
	claims  Claims
}

// Verify checks that state was issued by s for c, has not expired at now and
// has not been used, and then consumes it: a state verifies at most once.
// The checks run in this order: format ([ErrMalformed]), key id
// ([ErrUnknownKey]), signature ([ErrBadSignature]), expiry ([ErrExpired]),
// claims ([ErrMismatch]); only a state passing all of them consumes its nonce
// ([ErrReplayed] if already used, [ErrStore] if the store fails). So a failed
// attempt by another caller, or with other arguments, leaves the owner's
// confirmation usable.
func (s *Signer) Verify(ctx context.Context, now time.Time, state string, c Claims) error {
	t, err := s.Check(now, state, c)
	if err != nil {
		return err
	}
	return t.Consume(ctx, now)
}

// A Ticket is a state that passed [Signer.Check]: it can still be used up,
// once, with Consume. The zero Ticket consumes nothing and reports
// [ErrMalformed].
type Ticket struct {
	s       *Signer
	nonce   string
	expires time.Time
}

// Consume uses the checked state up: it reports [ErrReplayed] if it was used
// already, [ErrExpired] if it expired by now (or now is not a clock
// reading, as [ErrExpired] says), and [ErrStore] if the nonce store fails.
func (t Ticket) Consume(ctx context.Context, now time.Time) error {
	if t.s == nil {
		return ErrMalformed
	}
	if !clockReading(now) || !now.Before(t.expires) {
		return ErrExpired
	}
	first, err := consumeNonce(ctx, t.s.nonces, t.nonce, now, t.expires)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	if !first {
		return ErrReplayed
	}
	return nil
}

// Used reports, without using the checked state up, whether Consume would
// refuse it at now: [ErrReplayed] if it was used already, [ErrExpired] if
// it expired by now (or now is not a clock reading), an error that unwraps
// to [ErrStore] (and to the store's error) if the nonce store fails, and
// nil otherwise. A caller that charges limits or writes records before it
// consumes the ticket calls Used first, so that a replayed state is
// refused before it costs anything.
//
// Used records nothing, so nil is no promise: a concurrent call may
// consume the state first, and only Consume decides. When the nonce store
// does not implement [NonceChecker], Used checks the expiry only and
// returns nil for a used state: then too only Consume refuses it.
func (t Ticket) Used(ctx context.Context, now time.Time) error {
	if t.s == nil {
		return ErrMalformed
	}
	if !clockReading(now) || !now.Before(t.expires) {
		return ErrExpired
	}
	nc, ok := t.s.nonces.(NonceChecker)
	if !ok {
		return nil
	}
	used, err := usedNonce(ctx, nc, t.nonce, now, t.expires)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	if used {
		return ErrReplayed
	}
	return nil
}

// errStorePanicked is the failure of a nonce store that panicked.
var errStorePanicked = errors.New("the nonce store panicked")

// storePanicked makes a panic of a nonce store's (its bug), v, the
// store's failure (errStorePanicked: the caller gets an error that
// unwraps to [ErrStore]), logged to slog.Default at Error with its stack.
// Unrecovered, it reached a guard as a panic of its tool's.
func storePanicked(v any, err *error) {
	logsafe.Logger(slog.Default()).Error("confirm: the nonce store panicked", "panic", logsafe.PanicText(v), "stack", string(debug.Stack()))
	*err = errStorePanicked
}

// consumeNonce is st.Consume, a panic of st's its failure.
func consumeNonce(ctx context.Context, st NonceStore, nonce string, now, expires time.Time) (first bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			first = false
			storePanicked(v, &err)
		}
	}()
	return st.Consume(ctx, nonce, now, expires)
}

// usedNonce is nc.Used, a panic of nc's its failure.
func usedNonce(ctx context.Context, nc NonceChecker, nonce string, now, expires time.Time) (used bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			used = false
			storePanicked(v, &err)
		}
	}()
	return nc.Used(ctx, nonce, now, expires)
}

// errUnusable is the error of a nil or zero Signer.
var errUnusable = errors.New("confirm: the Signer is not usable (it has no key: make it with NewSigner)")

// Check runs the checks of [Signer.Verify] but the last: the state is not
// consumed. It returns the state's [Ticket], for a caller that acts on the
// state only if other checks pass too (limits, a write-ahead record) and
// would otherwise burn a state the client may retry with. Check does not
// look at the nonce store, so a state that passed Check may have been used
// already: ask [Ticket.Used] before those other checks, so that a replay is
// refused before it costs anything, and Consume the ticket before acting.
func (s *Signer) Check(now time.Time, state string, c Claims) (Ticket, error) {
	if s == nil || len(s.keys) == 0 {
		return Ticket{}, errUnusable
	}
	// Go's base64 decoders skip line breaks, even in strict mode: refused
	// here, so that a state has one spelling, the one Issue wrote.
	if len(state) > maxStateLen || strings.ContainsAny(state, "\r\n") {
		return Ticket{}, ErrMalformed
	}
	p64, m64, ok := strings.Cut(state, ".")
	if !ok {
		return Ticket{}, ErrMalformed
	}
	enc := base64.RawURLEncoding
	raw, err := enc.Strict().DecodeString(p64)
	if err != nil {
		return Ticket{}, ErrMalformed
	}
	sig, err := enc.Strict().DecodeString(m64)
	if err != nil || len(sig) != macLen {
		return Ticket{}, ErrMalformed
	}
	pl, ok := parse(raw)
	if !ok {
		return Ticket{}, ErrMalformed
	}
	key, ok := s.keys[pl.kid]
	if !ok {
		return Ticket{}, ErrUnknownKey
	}
	if !hmac.Equal(sig, mac([]byte(*key), raw)) {
		return Ticket{}, ErrBadSignature
	}
	exp := time.Unix(pl.expires, 0)
	if !clockReading(now) || !now.Before(exp) {
		return Ticket{}, ErrExpired
	}
	if pl.claims != c {
		return Ticket{}, ErrMismatch
	}
	return Ticket{s: s, nonce: hex.EncodeToString(pl.nonce), expires: exp}, nil
}

// parse decodes a payload, reporting false for any deviation from the
// format Issue writes (including trailing bytes).
func parse(b []byte) (payload, bool) {
	var p payload
	if len(b) < fixedLen+1 || b[0] != version {
		return p, false
	}
	e := binary.BigEndian.Uint64(b[1:9])
	if e > maxExpiry {
		return p, false
	}
	p.expires = int64(e)
	p.nonce = b[9:fixedLen]
	b = b[fixedLen:]
	n := int(b[0])
	b = b[1:]
	if n == 0 || n > maxKIDLen || len(b) < n {
		return p, false
	}
	p.kid, b = string(b[:n]), b[n:]
	fields := [3]*string{&p.claims.Subject, &p.claims.Tool, &p.claims.ArgsSHA256}
	for _, f := range fields {
		l, k := binary.Uvarint(b)
		if k <= 0 || l == 0 || l > uint64(len(b)-k) {
			return p, false
		}
		*f, b = string(b[k:k+int(l)]), b[k+int(l):]
	}
	return p, len(b) == 0
}
