package token

import (
	"bytes"
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpguard/mcpguard/internal/gaveup"
	"github.com/mcpguard/mcpguard/internal/jsondup"
	"github.com/mcpguard/mcpguard/policy"
)

// ErrInvalidToken is the error every refusal of an [Introspector] unwraps
// to: the endpoint judged the token, and it is inactive, or the answer
// fails one of the Introspector's checks. The error's text gives the
// reason and never contains the token, the answer or any of its members.
var ErrInvalidToken = errors.New("token: invalid token")

// ErrIntrospectionFailed is the error an [Introspector] returns when the
// token was not judged: the endpoint could not be reached, did not answer
// within the timeout, answered with a status other than 200 (a 401 when
// it refuses the client's credentials, a redirect, which is not followed),
// or with a body that is not one JSON object of at most 64 KiB without a
// member named twice (two of its own members whose names fold alike, as
// "sub" and "SUB" do, count as one named twice), or that is an OAuth error
// ("error" without "active"). Such a failure is never cached, and is not a
// refusal: it does not unwrap to [ErrInvalidToken]. A timeout, of the
// request or of the caller's context, also unwraps to
// context.DeadlineExceeded.
var ErrIntrospectionFailed = errors.New("token: introspection failed")

// Defaults and bounds of an [Introspector].
const (
	defaultIntrospectionTimeout = 5 * time.Second
	defaultCacheTTL             = time.Minute
	defaultNegativeCacheTTL     = 10 * time.Second
	defaultMaxCacheEntries      = 10000
	defaultMaxInFlight          = 64
	// maxAnswerBytes bounds the body of an introspection answer.
	maxAnswerBytes = 64 << 10
	// maxOpaqueLen bounds the length of a token sent to the endpoint.
	maxOpaqueLen = 8 << 10
)

// An IntrospectionConfig configures [NewIntrospector]. Endpoint and
// Audience are required; every other field has a documented zero value.
type IntrospectionConfig struct {
	// Endpoint is the URL of the authorization server's token
	// introspection endpoint (its metadata's "introspection_endpoint"):
	// https, or http to a loopback host (127.0.0.0/8, ::1, "localhost")
	// for tests and sidecars, without user info (give credentials in
	// ClientID and ClientSecret) or fragment. Required.
	Endpoint string
	// ClientID and ClientSecret authenticate this server to the endpoint
	// with HTTP Basic, each form-urlencoded before they are joined and
	// base64-encoded (RFC 6749, section 2.3.1). Set both or neither;
	// neither sends no Authorization header: for another client
	// authentication (mutual TLS, say), give a Client that does it.
	ClientID, ClientSecret string
	// Client sends the requests. Nil means a client of its own. Either
	// way, redirects are never followed (a request carrying the client's
	// credentials and the token is not sent again elsewhere): a redirect
	// is a failed introspection. The client's CheckRedirect is replaced.
	// The requests run on goroutines of the Introspector's, where a panic
	// of the client's (its Transport's) would end the process: it fails
	// the introspection instead, and is logged to slog.Default at Error
	// with its stack (not its value, which may quote the token). So is a
	// panic of ErrorHandler's, which is then ignored.
	Client *http.Client
	// Timeout bounds each request, from its start to the end of the
	// answer's body. Zero means 5 seconds. Negative is an error.
	Timeout time.Duration
	// Issuer, when set, is the exact "iss" an answer must carry. Empty
	// means "iss" is not checked.
	Issuer string
	// Audience is the identifier of this server: an answer's "aud" (a
	// string or an array of strings) must contain it, as for a [JWT] (the
	// MCP authorization specification binds tokens to the resource).
	// Required.
	Audience string
	// RolesClaim names the member of the answer that holds the caller's
	// roles, read as [JWTConfig.RolesClaim] is: a string of space-separated
	// roles or an array of strings, a dotted name reaching into nested
	// objects when no member has that name (`\.` being a dot within a
	// name). An answer without it has no roles. Zero means "scope", the
	// member RFC 7662 defines.
	RolesClaim string
	// AttrClaims maps names of the principal's Attrs to the members of
	// the answer that hold them, read as [JWTConfig.AttrClaims] reads
	// claims: each a string, an answer without one having no such
	// attribute, one where it is not a string refusing the token. Nil
	// means no Attrs. NewIntrospector copies the map; an empty attribute
	// name or member is an error.
	AttrClaims map[string]string
	// Leeway is the clock skew allowed when checking "exp" and "nbf".
	// Zero means none. Negative, or over [MaxLeeway], is an error.
	// [Introspector.Verifier]'s Expiration is the answer's own "exp":
	// give auth.RequireBearerTokenOptions.ClockSkew the same value
	// ([BindSessions] does so itself).
	Leeway time.Duration
	// CacheTTL is how long an answer that accepts a token is reused before
	// the endpoint is asked again (counted from the moment it was asked),
	// never past the token's "exp": a token the authorization server
	// revokes is accepted for up to this long (RFC 7662, section 4). Zero
	// means one minute; negative means such answers are not cached.
	CacheTTL time.Duration
	// NegativeCacheTTL is how long an answer that refuses a token
	// (inactive, or failing a check) is reused, so that a flood of
	// requests with a bad token does not become a flood of requests to the
	// endpoint. Zero means 10 seconds; negative means such answers are not
	// cached.
	NegativeCacheTTL time.Duration
	// MaxCacheEntries bounds the number of answers cached: when full, the
	// answer due to expire soonest is dropped for a new one. Zero means
	// 10000. Negative is an error.
	MaxCacheEntries int
	// MaxInFlight bounds the requests to the endpoint under way at once
	// (concurrent lookups of one token share one; a failed one counts
	// until its ErrorHandler returns). A lookup that would
	// start one more fails at once with an error that unwraps to
	// [ErrIntrospectionFailed], without asking and without calling
	// ErrorHandler: a flood of made-up tokens, each unknown to the cache,
	// does not become a flood of requests to the authorization server or
	// of waiting goroutines here. Zero means 64. Negative is an error.
	MaxInFlight int
	// ErrorHandler receives the error of every failed introspection (see
	// [ErrIntrospectionFailed]), once per request to the endpoint however
	// many lookups waited for it, before they go on: it should return
	// quickly (a lookup made while it runs asks the endpoint again, and
	// the request keeps its place of MaxInFlight until it returns). Nil
	// means a warning on slog.Default().
	ErrorHandler func(error)
	// Now returns the current time. Nil means time.Now. A reading before
	// the moment an answer was cached (a clock stepped back, which
	// time.Now's monotonic reading never is) makes that answer stale: the
	// endpoint is asked again. While it reads no clock reading (the zero
	// time of a clock never set up, any time before 1970-01-01 00:00:01
	// UTC), no token is accepted: every "exp" would be ahead of it.
	Now func() time.Time
}

// An Introspector verifies bearer tokens, opaque or not, by asking the
// authorization server's token introspection endpoint (RFC 7662), and
// turns them into principals: it is to opaque access tokens what a [JWT]
// is to signed ones, and plugs in at the same places (a *Introspector is a
// gateway.Authenticator, and [Introspector.Verifier] serves the go-sdk's
// auth.RequireBearerToken). It is safe for concurrent use and runs no
// goroutine but one for each request to the endpoint, which ends within
// the timeout (after the lookups waiting for it, when their contexts end
// first); it needs no closing.
//
// Each lookup not answered from the cache POSTs the token to the endpoint
// (RFC 7662, section 2.1: "token" and token_type_hint "access_token",
// form-urlencoded), with the client's credentials, and reads the answer
// (section 2.2). The token is accepted only if all of the following hold,
// and refused with an error that unwraps to [ErrInvalidToken] otherwise:
//   - it is not empty and at most 8 KiB long (a longer one is refused
//     without asking);
//   - "active" is the JSON boolean true (anything else, "true" the string
//     included, is an inactive token);
//   - "iss" equals [IntrospectionConfig.Issuer], when that is set, and
//     "aud" contains [IntrospectionConfig.Audience];
//   - "exp" and "nbf", when present, are numbers of seconds from 1970 to
//     the end of the year 9999, "exp" in the future and "nbf" not (each
//     within [IntrospectionConfig.Leeway]), checked at every lookup,
//     cached answers included;
//   - "token_type", when present, is "Bearer" (in any case): a token bound
//     to a proof of possession ("DPoP", RFC 9449) is refused when
//     presented as a bearer token, and so is an answer with "cnf" (a token
//     bound to a key or a certificate, RFC 8705 and RFC 9449), whose
//     binding this package cannot check;
//   - "sub" is a non-empty string, the roles member is absent, an array of
//     strings or a string, and the resulting principal passes
//     [CheckPrincipal].
//
// An endpoint that cannot answer (see [ErrIntrospectionFailed]) makes the
// lookup fail with an error that unwraps to ErrIntrospectionFailed, not to
// ErrInvalidToken: the token was not judged. Its errors show the endpoint
// without user info, query or fragment, and never the token, the client's
// secret or the answer.
//
// Answers are cached under the SHA-256 digest of the token, never the
// token itself: an accepting answer for [IntrospectionConfig.CacheTTL] or
// until the token's "exp", whichever is sooner; a refusing one for
// [IntrospectionConfig.NegativeCacheTTL]; a failure not at all. The cache
// holds at most [IntrospectionConfig.MaxCacheEntries] answers, dropping
// the one due to expire soonest when full. Concurrent lookups of a token
// that is not cached share one request; a lookup whose context ends stops
// waiting, the request goes on for the others (within the timeout). At
// most [IntrospectionConfig.MaxInFlight] requests are under way at once;
// beyond, a lookup fails at once.
type Introspector struct {
	endpoint   *string // see hide
	shown      string  // endpoint without user info or query, for errors and logs
	authz      *string // the Authorization header, or ""; see hide
	client     *http.Client
	timeout    time.Duration
	issuer     string
	audience   string
	rolesClaim string
	attrClaims map[string]string // nil: none
	leeway     time.Duration
	ttl        time.Duration // negative: accepting answers are not cached
	negTTL     time.Duration // negative: refusing answers are not cached
	maxEntries int
	maxFlights int
	report     func(error)
	now        func() time.Time

	mu sync.Mutex
	st *introState // under mu; behind a pointer, as the credentials are (see hide): its keys are digests of tokens
}

// introState is the state of an Introspector that changes, under its mu.
type introState struct {
	cache   map[[sha256.Size]byte]*answer
	queue   answerQueue // the cached answers, soonest to expire first
	flights map[[sha256.Size]byte]*introspection
	// reporting counts the failed requests whose ErrorHandler runs: no
	// longer joined by a lookup, they still hold a place of MaxInFlight.
	reporting int
}

// An answer is what the endpoint said of one token, checked except for
// the times, which are checked at each lookup.
type answer struct {
	pr       *policy.Principal // nil: refused
	reason   string            // why, when refused
	exp, nbf time.Time         // zero: absent

	// Set while cached, under Introspector.mu.
	key    [sha256.Size]byte
	stored time.Time // when it was cached
	until  time.Time
	index  int // in the queue
}

// An introspection is one request that concurrent lookups of a token
// share; done is closed when a or err is set.
type introspection struct {
	done chan struct{}
	a    *answer
	err  error
	// asked is when the request started: its answer's cache lifetime
	// counts from then, as the endpoint may have judged the token at
	// any moment after it (see [Introspector.store]).
	asked time.Time
}

// MaxLeeway bounds [JWTConfig.Leeway] and [IntrospectionConfig.Leeway]:
// five minutes, the clock skew Kerberos allows. A larger leeway would keep
// accepting a token long after it expired (or was meant to start), which
// is what the expiry is there to prevent; clocks that far apart need
// fixing, not a wider window.
const MaxLeeway = 5 * time.Minute

// NewIntrospector returns an Introspector for cfg. It makes no request. It
// returns an error when Endpoint is not an https URL (or http to a
// loopback host) or has user info or a fragment, when only one of ClientID
// and ClientSecret is set, when Audience is empty, when Timeout,
// Leeway, MaxCacheEntries or MaxInFlight is negative, when Leeway is
// over [MaxLeeway], or when AttrClaims holds an empty name. Its errors
// never contain the client's secret.
func NewIntrospector(cfg IntrospectionConfig) (*Introspector, error) {
	if _, err := checkServerURL(cfg.Endpoint, "the endpoint (give credentials as ClientID and ClientSecret)", true); err != nil {
		return nil, fmt.Errorf("token: introspection endpoint %s: %w", redactURL(cfg.Endpoint), err)
	}
	switch {
	case (cfg.ClientID == "") != (cfg.ClientSecret == ""):
		return nil, errors.New("token: introspection: set both ClientID and ClientSecret, or neither")
	case cfg.Audience == "":
		return nil, errors.New("token: introspection: no audience")
	case cfg.Timeout < 0 || cfg.Leeway < 0:
		return nil, errors.New("token: introspection: negative Timeout or Leeway")
	case cfg.Leeway > MaxLeeway:
		return nil, fmt.Errorf("token: introspection: leeway %v over %v: it would accept answers for tokens that expired that long ago; set the clocks right instead", cfg.Leeway, MaxLeeway)
	case cfg.MaxCacheEntries < 0 || cfg.MaxInFlight < 0:
		return nil, errors.New("token: introspection: negative MaxCacheEntries or MaxInFlight")
	}
	attrs, err := copyAttrClaims(cfg.AttrClaims)
	if err != nil {
		return nil, fmt.Errorf("token: introspection: %w", err)
	}
	i := &Introspector{
		attrClaims: attrs,
		endpoint:   hide(cfg.Endpoint),
		shown:      redactURL(cfg.Endpoint),
		client:     noRedirects(cfg.Client),
		timeout:    cmpOr(cfg.Timeout, defaultIntrospectionTimeout),
		issuer:     cfg.Issuer,
		audience:   cfg.Audience,
		rolesClaim: cfg.RolesClaim,
		leeway:     cfg.Leeway,
		ttl:        cmpOr(cfg.CacheTTL, defaultCacheTTL),
		negTTL:     cmpOr(cfg.NegativeCacheTTL, defaultNegativeCacheTTL),
		maxEntries: cfg.MaxCacheEntries,
		maxFlights: cfg.MaxInFlight,
		report:     cfg.ErrorHandler,
		now:        cfg.Now,
		authz:      hide(""),
		st:         &introState{cache: map[[sha256.Size]byte]*answer{}, flights: map[[sha256.Size]byte]*introspection{}},
	}
	if i.rolesClaim == "" {
		i.rolesClaim = "scope"
	}
	if i.maxEntries == 0 {
		i.maxEntries = defaultMaxCacheEntries
	}
	if i.maxFlights == 0 {
		i.maxFlights = defaultMaxInFlight
	}
	if cfg.ClientID != "" {
		cred := url.QueryEscape(cfg.ClientID) + ":" + url.QueryEscape(cfg.ClientSecret)
		i.authz = hide("Basic " + base64.StdEncoding.EncodeToString([]byte(cred)))
	}
	if i.report == nil {
		i.report = func(err error) {
			slog.Default().Warn("token: introspection failed; the token is refused", "err", err)
		}
	}
	i.report = shieldReport(i.report)
	if i.now == nil {
		i.now = time.Now
	}
	return i, nil
}

// noRedirects returns a copy of client (a new client for nil) that never
// follows a redirect: the redirect is the response.
func noRedirects(client *http.Client) *http.Client {
	c := &http.Client{}
	if client != nil {
		*c = *client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// String returns the endpoint without its user info, query and fragment
// (a query shown as "?…"): the form its errors show, for logs.
func (i *Introspector) String() string {
	if i == nil {
		return "token.Introspector(nil)"
	}
	return i.shown
}

// Format prints [Introspector.String] for every verb, so that the client's
// credentials are never printed.
func (i *Introspector) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(i.String())) }

// refusal is a refusal of an Introspector. It unwraps to ErrInvalidToken
// and, when sdk is set, to auth.ErrInvalidToken as well.
type refusal struct {
	reason string
	sdk    bool
}

func (e *refusal) Error() string { return ErrInvalidToken.Error() + ": " + e.reason }

func (e *refusal) Unwrap() []error {
	if e.sdk {
		return []error{ErrInvalidToken, auth.ErrInvalidToken}
	}
	return []error{ErrInvalidToken}
}

// Introspect returns the principal of tok, whose Subject is the answer's
// "sub" and Roles its roles member (nil without one), and the time of its
// "exp" (zero without one), asking the endpoint unless a cached answer
// serves (see [Introspector] for every check). Its Attrs are the members
// [IntrospectionConfig.AttrClaims] names (nil without any). The principal
// is the caller's. A refusal unwraps to [ErrInvalidToken]; a token the
// endpoint could not judge, or a lookup whose ctx ended before the answer
// came, is an error that unwraps to [ErrIntrospectionFailed].
func (i *Introspector) Introspect(ctx context.Context, tok string) (*policy.Principal, time.Time, error) {
	switch {
	case tok == "":
		return nil, time.Time{}, &refusal{reason: "empty token"}
	case len(tok) > maxOpaqueLen:
		return nil, time.Time{}, &refusal{reason: fmt.Sprintf("longer than %d bytes", maxOpaqueLen)}
	}
	a, err := i.lookup(ctx, tok)
	if err != nil {
		return nil, time.Time{}, err
	}
	return i.judge(a, i.now())
}

// Authenticate returns the principal of tok, as [Introspector.Introspect]
// does: *Introspector is a gateway.Authenticator.
func (i *Introspector) Authenticate(ctx context.Context, tok string) (*policy.Principal, error) {
	pr, _, err := i.Introspect(ctx, tok)
	return pr, err
}

// Verifier returns a TokenVerifier over i for the go-sdk's
// auth.RequireBearerToken: a token that [Introspector.Introspect] accepts
// gives a TokenInfo whose UserID is its subject, whose Scopes are its
// roles, whose Extra holds its Attrs ([ExtraAttrs]) and whose Expiration
// is its "exp" (zero without one: the go-sdk
// then refuses it unless RequireBearerTokenOptions.AllowMissingExpiration
// is set); a refusal is an error that unwraps to both auth.ErrInvalidToken
// (the go-sdk answers 401 with the error's text) and [ErrInvalidToken]. A
// token the endpoint could not judge is [ErrIntrospectionFailed] itself,
// which the go-sdk answers with 500 and its text: the reason, which may
// name the endpoint's host, goes to [IntrospectionConfig.ErrorHandler]
// only.
func (i *Introspector) Verifier() auth.TokenVerifier {
	return func(ctx context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		pr, exp, err := i.Introspect(ctx, tok)
		if err != nil {
			if r := (*refusal)(nil); errors.As(err, &r) {
				return nil, &refusal{reason: r.reason, sdk: true}
			}
			return nil, ErrIntrospectionFailed
		}
		return withAttrs(&auth.TokenInfo{UserID: pr.Subject, Scopes: pr.Roles, Expiration: exp}, pr), nil
	}
}

// judge checks the times of a at now, and returns its principal.
func (i *Introspector) judge(a *answer, now time.Time) (*policy.Principal, time.Time, error) {
	switch {
	case a.pr == nil:
		return nil, time.Time{}, &refusal{reason: a.reason}
	case now.Unix() <= 0:
		return nil, time.Time{}, &refusal{reason: "the introspector's clock (IntrospectionConfig.Now) reads no time: zero or before 1970"}
	case !a.exp.IsZero() && !now.Before(a.exp.Add(i.leeway)):
		return nil, time.Time{}, &refusal{reason: "expired"}
	case !a.nbf.IsZero() && now.Add(i.leeway).Before(a.nbf):
		return nil, time.Time{}, &refusal{reason: "not valid yet (nbf)"}
	}
	return &policy.Principal{Subject: a.pr.Subject, Roles: slices.Clone(a.pr.Roles), Attrs: maps.Clone(a.pr.Attrs)}, a.exp, nil
}

// lookup returns the answer for tok: cached, or from the request under
// way for it, or from a new one.
func (i *Introspector) lookup(ctx context.Context, tok string) (*answer, error) {
	if i == nil || i.st == nil {
		return nil, fmt.Errorf("%w: an Introspector not made by NewIntrospector", ErrIntrospectionFailed)
	}
	key := sha256.Sum256([]byte(tok))
	i.mu.Lock()
	if a, ok := i.st.cache[key]; ok {
		// A reading before the answer was cached (a clock stepped back,
		// which time.Now's monotonic reading never is) cannot tell how
		// long ago that was: the answer is asked again, not kept until
		// the clock has caught up (a day, for a day's step).
		if now := i.now(); now.Before(a.until) && !now.Before(a.stored) {
			i.mu.Unlock()
			return a, nil
		}
		i.drop(a)
	}
	f, ok := i.st.flights[key]
	if err := gaveup.Err(ctx); !ok && err != nil {
		// Nobody would wait for a new request.
		i.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrIntrospectionFailed, err)
	}
	if !ok && len(i.st.flights)+i.st.reporting >= i.maxFlights {
		i.mu.Unlock()
		return nil, fmt.Errorf("%w: %d requests to the endpoint under way, the most allowed (MaxInFlight)", ErrIntrospectionFailed, i.maxFlights)
	}
	if !ok {
		f = &introspection{done: make(chan struct{}), asked: i.now()}
		i.st.flights[key] = f
		go i.ask(context.WithoutCancel(ctx), key, tok, f)
	}
	i.mu.Unlock()
	select {
	case <-f.done:
		return f.a, f.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: waiting for the endpoint: %w", ErrIntrospectionFailed, ctx.Err())
	}
}

// ask runs introspection f of tok, caches its answer, and reports its
// failure. It ends within the timeout.
func (i *Introspector) ask(ctx context.Context, key [sha256.Size]byte, tok string, f *introspection) {
	a, err := i.request(ctx, tok)
	i.mu.Lock()
	delete(i.st.flights, key)
	if err == nil {
		i.store(key, a, f.asked)
	} else {
		i.st.reporting++
	}
	i.mu.Unlock()
	if err != nil {
		// Reported once the request is no longer under way: a handler
		// that blocks holds the lookups that waited for it (as
		// documented), not the later ones; it keeps its place of
		// MaxInFlight, so that a slow handler does not gather goroutines.
		err = fmt.Errorf("%w: endpoint %s: %w", ErrIntrospectionFailed, i.shown, err)
		i.report(err)
		i.mu.Lock()
		i.st.reporting--
		i.mu.Unlock()
	}
	f.a, f.err = a, err
	close(f.done)
}

// request asks the endpoint about tok and reads its answer. Its errors do
// not name the endpoint, and never contain the token, the credentials or
// the body.
func (i *Introspector) request(ctx context.Context, tok string) (*answer, error) {
	ctx, cancel := context.WithTimeout(ctx, i.timeout)
	defer cancel()
	form := url.Values{"token": {tok}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, *i.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, errors.New("cannot make the request")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if *i.authz != "" {
		req.Header.Set("Authorization", *i.authz)
	}
	resp, err := do(i.client, req)
	if err != nil {
		// net/http's error quotes the URL, whole.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// Read a little, so that the connection may be used again.
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
		switch c := resp.StatusCode; {
		case c == http.StatusUnauthorized || c == http.StatusForbidden:
			return nil, fmt.Errorf("status %d, want 200 (the endpoint refused the client's credentials)", c)
		case c >= 300 && c < 400:
			return nil, fmt.Errorf("status %d, want 200 (redirects are not followed)", c)
		default:
			return nil, fmt.Errorf("status %d, want 200", c)
		}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if len(data) > maxAnswerBytes {
		return nil, fmt.Errorf("answer larger than %d bytes", maxAnswerBytes)
	}
	return i.read(data)
}

// read checks an answer, but for its times. An answer that cannot be read
// is an error; one that refuses the token is an answer without principal.
func (i *Introspector) read(data []byte) (*answer, error) {
	// Numbers are kept as written (json.Number), so that one beyond
	// float64's range (JSON sets none) leaves the answer readable: in
	// "exp" or "nbf" it is out of range, anywhere else it is not read.
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, errors.New("the answer is not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("the answer is not a JSON object")
	}
	// A member named twice is read as its last occurrence by encoding/json
	// and as its first by some other parsers: the answer is ambiguous. So
	// are two members whose names fold alike: they are read exactly here,
	// and as one, the last, by encoding/json decoding into a struct (as
	// the go-sdk's example verifier does).
	fold := func(depth int) bool { return depth == 1 }
	if _, _, dup := jsondup.Member(data, fold); dup {
		return nil, errors.New("the answer names a member twice")
	}
	_, hasActive := m["active"]
	if _, hasError := m["error"]; hasError && !hasActive {
		// An OAuth error answer (RFC 6749, section 5.2) sent with 200: the
		// endpoint refused the request, it did not judge the token.
		return nil, errors.New("the answer is an OAuth error, not a judgement of the token")
	}
	refuse := func(reason string) (*answer, error) { return &answer{reason: reason}, nil }
	if active, _ := m["active"].(bool); !active {
		return refuse("inactive")
	}
	if iss, _ := m["iss"].(string); i.issuer != "" && iss != i.issuer {
		return refuse("wrong or missing issuer")
	}
	if reason := i.checkAudience(m["aud"]); reason != "" {
		return refuse(reason)
	}
	if tt, present := m["token_type"]; present {
		if s, _ := tt.(string); !strings.EqualFold(s, "Bearer") {
			return refuse("token_type is not Bearer")
		}
	}
	if _, present := m["cnf"]; present {
		return refuse("bound to a key or a certificate (cnf), which is not checked")
	}
	exp, ok := numericDate(m, "exp")
	if !ok {
		return refuse("exp out of range or not a number")
	}
	nbf, ok := numericDate(m, "nbf")
	if !ok {
		return refuse("nbf out of range or not a number")
	}
	sub, isString := m["sub"].(string)
	if _, present := m["sub"]; present && !isString {
		return refuse("sub is not a string")
	}
	if sub == "" {
		return refuse("missing or empty sub")
	}
	roles, err := readRoles(m, i.rolesClaim)
	if err != nil {
		return refuse(err.Error())
	}
	attrs, err := readAttrs(m, i.attrClaims)
	if err != nil {
		return refuse(err.Error())
	}
	pr := &policy.Principal{Subject: sub, Roles: roles, Attrs: attrs}
	if err := CheckPrincipal(pr); err != nil {
		return refuse(err.Error())
	}
	return &answer{pr: pr, exp: exp, nbf: nbf}, nil
}

// checkAudience returns why aud, an answer's "aud", does not hold the
// audience, or "".
func (i *Introspector) checkAudience(aud any) string {
	switch a := aud.(type) {
	case nil:
		return "missing aud"
	case string:
		if a == i.audience {
			return ""
		}
	case []any:
		found := false
		for _, x := range a {
			s, ok := x.(string)
			if !ok {
				return "aud holds a value that is not a string"
			}
			found = found || s == i.audience
		}
		if found {
			return ""
		}
	default:
		return "aud is neither a string nor an array of strings"
	}
	return "wrong audience"
}

// numericDate reads the time member name of m, a number of seconds since
// 1970 (RFC 7519's NumericDate): zero when absent, ok false when it is not
// a number from 0 to the end of the year 9999.
func numericDate(m map[string]any, name string) (t time.Time, ok bool) {
	x, present := m[name]
	if !present {
		return time.Time{}, true
	}
	n, isNumber := x.(json.Number)
	f, err := n.Float64()
	if !isNumber || err != nil || !(f >= 0 && f <= maxJWTTime) {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}

// store caches a, the answer of a request started at asked, under key,
// if answers of its kind are cached; i.mu is held. An acceptance's
// lifetime counts from asked, not from now: the endpoint judged the token
// at some moment after asked, and a token it revoked since is accepted
// for no longer than CacheTTL, however long the answer took to come. A
// refusal's counts from now (kept longer, it refuses nothing more).
func (i *Introspector) store(key [sha256.Size]byte, a *answer, asked time.Time) {
	now := i.now()
	var ttl time.Duration
	switch {
	case a.pr == nil:
		ttl = i.negTTL
	case !a.exp.IsZero() && !a.exp.After(now):
		// Accepted past its exp, within the leeway: judge refuses it
		// soon, so keep it no longer than a refusal.
		ttl = min(i.ttl, i.negTTL)
	default:
		ttl = i.ttl
	}
	if ttl <= 0 {
		return
	}
	if a.pr != nil {
		// Reached from now, as below, for time.Now's monotonic reading;
		// a clock stepped back since asked counts from now.
		ttl -= max(now.Sub(asked), 0)
		if ttl <= 0 {
			return // the answer took the whole TTL to come
		}
	}
	until := now.Add(ttl)
	if a.pr != nil && !a.exp.IsZero() && a.exp.After(now) && a.exp.Before(until) {
		// Reached from now, so that until keeps time.Now's monotonic
		// reading, as exp, a wall time, does not.
		until = now.Add(a.exp.Sub(now))
	}
	if old, ok := i.st.cache[key]; ok {
		i.drop(old)
	}
	for len(i.st.queue) > 0 && !now.Before(i.st.queue[0].until) {
		i.drop(i.st.queue[0])
	}
	for len(i.st.cache) >= i.maxEntries {
		i.drop(i.st.queue[0])
	}
	a.key, a.stored, a.until = key, now, until
	i.st.cache[key] = a
	heap.Push(&i.st.queue, a)
}

// drop removes the cached answer a; i.mu is held.
func (i *Introspector) drop(a *answer) {
	heap.Remove(&i.st.queue, a.index)
	delete(i.st.cache, a.key)
}

// An answerQueue is a heap of cached answers, the soonest to expire first.
type answerQueue []*answer

func (q answerQueue) Len() int           { return len(q) }
func (q answerQueue) Less(a, b int) bool { return q[a].until.Before(q[b].until) }
func (q answerQueue) Swap(a, b int) {
	q[a], q[b] = q[b], q[a]
	q[a].index, q[b].index = a, b
}

func (q *answerQueue) Push(x any) {
	a := x.(*answer)
	a.index = len(*q)
	*q = append(*q, a)
}

func (q *answerQueue) Pop() any {
	old := *q
	a := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return a
}
