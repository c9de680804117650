package token

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/internal/loopback"
)

// Defaults of [RemoteKeySetOptions].
const (
	defaultFetchTimeout       = 10 * time.Second
	defaultMinRefreshInterval = time.Minute
	defaultMaxAge             = time.Hour
	// maxBodyBytes bounds the body of a JWK Set or a discovery document.
	maxBodyBytes = 1 << 20
)

// RemoteKeySetOptions configures [NewRemoteKeySet]. Nil means all the
// defaults; the zero value of each field is documented.
type RemoteKeySetOptions struct {
	// Client sends the requests. Nil means a client of its own. Either
	// way, a redirect is followed only to a URL that NewRemoteKeySet
	// would accept (https, or http to a loopback host). Refreshes run on
	// goroutines of the set's, where a panic of the client's (its
	// Transport's) would end the process: it fails the fetch instead, and
	// is logged to slog.Default at Error with its stack (not its value,
	// which may quote the URL). So is a panic of ErrorHandler's, which is
	// then ignored.
	Client *http.Client
	// Timeout bounds each fetch, from the request to the end of the body.
	// Zero means 10 seconds.
	Timeout time.Duration
	// MinRefreshInterval is the least time between the starts of two
	// fetches: a token whose kid is not in the set triggers a fetch (the
	// provider may have rotated its keys) only when the last one started
	// at least this long ago; otherwise it is refused at once (not
	// judged, while that fetch failed: see [ErrKeySetUnavailable]). It spaces
	// the reads of the discovery document of a set made by
	// [DiscoverKeySet] in the same way. Zero means one minute. It must
	// not be over MaxAge (after the defaults), since it holds back the
	// fetch that MaxAge makes due as well.
	MinRefreshInterval time.Duration
	// MaxAge is how long a fetched set is used before it is fetched again.
	// A response's Cache-Control max-age (less its Age, the time it spent
	// in a cache on the way) shortens it, but not below MinRefreshInterval;
	// so do no-store and no-cache, which make it
	// MinRefreshInterval (never a fetch per lookup, which tokens could
	// then force). Zero means one hour. It must not be under
	// MinRefreshInterval (after the defaults): a MaxAge under a minute
	// needs a MinRefreshInterval no longer than it.
	MaxAge time.Duration
	// ErrorHandler receives the error of every failed refresh (the last
	// good set stays in use), and of every fetched set that had keys left
	// out (see [RemoteKeySet]). It is called before the lookups waiting for
	// that refresh go on: it should return quickly. Nil means a warning on
	// slog.Default().
	ErrorHandler func(error)
	// Now returns the current time. Nil means time.Now. A reading
	// before the start of the last fetch (a clock stepped back, which
	// time.Now's monotonic reading never is) makes the set due and lets
	// one fetch start at once; the interval is then kept from it.
	Now func() time.Time
}

// A RemoteKeySet is an issuer's JWK Set fetched from its URL (the
// provider's "jwks_uri") for [JWTConfig.KeySet]: the keys are looked up by
// kid and refreshed when the provider rotates them. It is safe for
// concurrent use, and runs no goroutine of its own between lookups (its
// HTTP client may keep an idle connection to the provider): it needs no
// closing. Its errors, String, and its formatting with any verb (as a
// field of another value too) show its URL without user info, query or
// fragment, where a credential may be.
//
// Every response is read as [ParseJWKS] reads a set, with one difference:
// a key for which ParseJWKS refuses the whole set (an unknown kty or crv,
// such as a new algorithm's, no kid, a malformed member, a weak key, a
// private member) is left out, and so is every copy of a kid listed more
// than once (a signature key with a private member counts as a copy, and
// so does a key with a member of the wrong type whose kid is a string,
// unless its "use" or "key_ops" names another use), and what was left out
// is reported to [RemoteKeySetOptions.ErrorHandler] (ten keys listed, any
// others counted): one key the package cannot use does not stop the
// provider's rotation. A set left with no usable key is a failed fetch. A response
// must have status 200 and a body of at most 1 MiB. As with ParseJWKS, a
// key with "alg" verifies that algorithm only (see [AlgKey]).
//
// Refreshing is lazy, on lookups. The set is fetched again when a lookup
// finds it older than [RemoteKeySetOptions.MaxAge], or when a token names
// a kid the set lacks (or has no kid and no key of the set verifies it:
// see [JWTConfig.KeySet]); never more than once per
// [RemoteKeySetOptions.MinRefreshInterval], so a flood of tokens with
// made-up kids cannot make it hammer the provider: a miss inside the
// interval is answered at once, and concurrent misses share one fetch. The
// lookup that starts a fetch waits for it (at most
// [RemoteKeySetOptions.Timeout], or until its context ends); concurrent
// lookups whose kid is in the current set do not wait.
//
// A set made by [DiscoverKeySet] also reads the issuer's discovery
// document again when a refresh fails or leaves the kid that caused it
// missing, at most once per MinRefreshInterval, and moves to the jwks_uri
// it names if that changed (see DiscoverKeySet). Such a refresh makes up
// to three fetches (the set, the document, the set at its new URL), each
// within Timeout, and the lookup that started it waits for all of them.
//
// A failed fetch (network error, timeout, another status, a larger body,
// a set that is not a JWK Set or holds no usable key) is reported to
// [RemoteKeySetOptions.ErrorHandler] and changes nothing: the last good
// set stays in use, however old, until a fetch succeeds; a key the
// provider removed is refused from the first successful fetch without it.
// A kid the set lacks is refused as unknown only while the last fetch
// succeeded: while it failed, such a token is not judged (the provider
// may have rotated that key in), an error that unwraps to
// [ErrKeySetUnavailable], until a fetch succeeds, at most once per
// MinRefreshInterval as ever.
type RemoteKeySet struct {
	client      *http.Client
	timeout     time.Duration
	minInterval time.Duration
	maxAge      time.Duration
	report      func(error)
	now         func() time.Time
	disc        *discovery // the issuer's metadata, for a set DiscoverKeySet made; else nil

	mu        sync.Mutex
	url       *string                     // where keys came from (see hide)
	shown     string                      // url without user info or query, for errors and logs
	keys      map[string]crypto.PublicKey // the last good set; replaced, never modified
	gen       uint64                      // counts the sets keys has held
	expires   time.Time                   // when keys are due for a refresh
	attempted time.Time                   // start of the last fetch
	failed    error                       // the error of the last fetch, nil once one succeeds
	flight    *flight                     // the fetch under way, or nil
}

// A flight is one fetch that concurrent lookups share; done is closed
// when it ends.
type flight struct {
	done chan struct{}
}

// NewRemoteKeySet fetches the JWK Set at rawURL, within ctx and the
// options' Timeout, and returns it as a RemoteKeySet. The URL must be
// https, or http to a loopback host (127.0.0.0/8, ::1, "localhost") for
// tests and sidecars. It returns an error for any other URL, negative
// durations, a MinRefreshInterval over MaxAge (the defaults included), or
// when the first fetch fails: a key set that never held a key is of no
// use. A fetch cut short by ctx or the Timeout is an error that unwraps
// to ctx's error, context.DeadlineExceeded for the Timeout.
func NewRemoteKeySet(ctx context.Context, rawURL string, opts *RemoteKeySetOptions) (*RemoteKeySet, error) {
	if err := checkKeySetURL(rawURL); err != nil {
		return nil, fmt.Errorf("token: JWK Set URL: %w", err)
	}
	o, err := checkOptions(opts)
	if err != nil {
		return nil, err
	}
	s := &RemoteKeySet{
		url:         hide(rawURL),
		shown:       redactURL(rawURL),
		timeout:     cmpOr(o.Timeout, defaultFetchTimeout),
		minInterval: cmpOr(o.MinRefreshInterval, defaultMinRefreshInterval),
		maxAge:      cmpOr(o.MaxAge, defaultMaxAge),
		report:      o.ErrorHandler,
		now:         o.Now,
	}
	if s.report == nil {
		s.report = func(err error) {
			slog.Default().Warn("token: JWK Set: a refresh failed (the last good set is kept) or left keys out", "err", err)
		}
	}
	s.report = shieldReport(s.report)
	if s.now == nil {
		s.now = time.Now
	}
	s.client = newClient(o.Client)
	s.attempted = s.now()
	keys, ttl, err := s.fetch(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	s.keys, s.expires, s.gen = keys, s.now().Add(ttl), 1
	return s, nil
}

// checkOptions returns *opts, or the zero options for nil, and an error
// for a negative duration or a MinRefreshInterval over MaxAge.
func checkOptions(opts *RemoteKeySetOptions) (RemoteKeySetOptions, error) {
	var o RemoteKeySetOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout < 0 || o.MinRefreshInterval < 0 || o.MaxAge < 0 {
		return o, errors.New("token: JWK Set: negative Timeout, MinRefreshInterval or MaxAge")
	}
	// The interval holds back the fetch that MaxAge makes due: a longer
	// one would keep a key the provider removed for that long.
	// A default is said to be one: the caller did not set it.
	if minInterval, maxAge := cmpOr(o.MinRefreshInterval, defaultMinRefreshInterval), cmpOr(o.MaxAge, defaultMaxAge); minInterval > maxAge {
		shownInterval, shownAge := minInterval.String(), maxAge.String()
		if o.MinRefreshInterval == 0 {
			shownInterval += " (the default, for a zero MinRefreshInterval)"
		}
		if o.MaxAge == 0 {
			shownAge += " (the default, for a zero MaxAge)"
		}
		return o, fmt.Errorf("token: JWK Set: MinRefreshInterval %s over MaxAge %s: no fetch would start before %v, so the set (and a key the provider removed) would be used that long; make MinRefreshInterval at most MaxAge", shownInterval, shownAge, minInterval)
	}
	return o, nil
}

// newClient returns a copy of client (a new client for nil) that follows
// a redirect only to a URL checkKeySetURL accepts, and then as client
// would, or at most 10 times when client has no CheckRedirect.
func newClient(client *http.Client) *http.Client {
	c := &http.Client{}
	if client != nil {
		*c = *client
	}
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := checkKeySetURL(req.URL.String()); err != nil {
			return fmt.Errorf("redirect refused: %w", err)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return c
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// redactURL returns raw without its user info, query and fragment, where a
// credential may be (a password, an API token as the user name, an
// "?api_key="), a query being shown as "?…".
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an invalid URL)"
	}
	shown := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	s := shown.String()
	if u.RawQuery != "" || u.ForceQuery {
		s += "?…"
	}
	return s
}

// String returns the set's URL without its user info, query and fragment,
// which may hold a credential: the form its errors show, for logs.
func (s *RemoteKeySet) String() string {
	if s == nil {
		return "token.RemoteKeySet(nil)"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shown
}

// Format prints [RemoteKeySet.String] for every verb, so that the URL's
// credential is never printed (%#v, say, would print the fields).
func (s *RemoteKeySet) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// hide returns s behind a pointer, for a field that may hold a
// credential (of a RemoteKeySet, an Introspector). Format hides it, but
// fmt calls Format only for a value it can reach as an interface: it
// prints the fields of a *RemoteKeySet held in an unexported field with
// %s, say (as "%!s(*token.RemoteKeySet=&{...})"), or those of a
// RemoteKeySet value, and a pointer among those fields prints as an
// address.
func hide(s string) *string { return &s }

// checkKeySetURL accepts https URLs, and http URLs to a loopback host.
func checkKeySetURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	if u.Host == "" || u.Hostname() == "" {
		return errors.New("no host")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopback.IsHost(u.Host) {
			return nil
		}
		return errors.New("http is accepted only to a loopback host (127.0.0.1, ::1, localhost): use https")
	}
	return errors.New("scheme must be https")
}

// checkServerURL parses raw, the URL of a server this package asks about
// tokens (an issuer, an introspection endpoint): one checkKeySetURL
// accepts, without user info or a fragment, nor a query unless
// allowQuery. what names it in errors.
func checkServerURL(raw, what string, allowQuery bool) (*url.URL, error) {
	if err := checkKeySetURL(raw); err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, errors.New("not a URL")
	case u.User != nil:
		return nil, fmt.Errorf("user info in %s", what)
	case !allowQuery && (u.RawQuery != "" || u.ForceQuery):
		return nil, fmt.Errorf("a query in %s", what)
	case strings.Contains(raw, "#"):
		return nil, fmt.Errorf("a fragment in %s", what)
	}
	return u, nil
}

// fetch GETs and parses the set at rawURL, and returns how long it may be
// used.
func (s *RemoteKeySet) fetch(ctx context.Context, rawURL string) (map[string]crypto.PublicKey, time.Duration, error) {
	shown := redactURL(rawURL)
	fail := func(format string, args ...any) (map[string]crypto.PublicKey, time.Duration, error) {
		return nil, 0, fmt.Errorf("token: JWK Set %s: "+format, append([]any{shown}, args...)...)
	}
	data, header, err := get(ctx, s.client, s.timeout, rawURL, "application/jwk-set+json, application/json")
	if err != nil {
		return fail("%w", err)
	}
	keys, skipped, err := parseJWKS(data, true)
	if err != nil {
		if len(skipped) > 0 {
			err = errors.Join(err, joinSome(skipped))
		}
		return fail("%w", err)
	}
	if len(skipped) > 0 {
		s.report(fmt.Errorf("token: JWK Set %s: %d keys left out, %d kept: %w", shown, len(skipped), len(keys), joinSome(skipped)))
	}
	ttl := s.maxAge
	if fresh, ok := maxAge(header.Values("Cache-Control")); ok {
		// The response may have waited in a cache for Age seconds of
		// its lifetime already (RFC 9111, section 4.2.3).
		if fresh -= ageOf(header.Values("Age")); fresh < ttl {
			ttl = max(fresh, s.minInterval)
		}
	}
	return keys, ttl, nil
}

// maxListed is the number of keys left out of a set that a report lists;
// it counts the others.
const maxListed = 10

// joinSome joins the first maxListed of errs, and says how many more
// there are, so that a set of thousands of unusable keys does not make a
// report of megabytes.
func joinSome(errs []error) error {
	if len(errs) <= maxListed {
		return errors.Join(errs...)
	}
	return errors.Join(append(errs[:maxListed:maxListed], fmt.Errorf("and %d more", len(errs)-maxListed))...)
}

// A statusError is the status of a response other than 200.
type statusError struct{ code int }

func (e *statusError) Error() string { return fmt.Sprintf("status %d, want 200", e.code) }

// get GETs rawURL with client, within ctx and timeout (from the request to
// the end of the body), and returns the body and header of the response.
// It returns a *statusError for a status other than 200, and an error for
// a body larger than maxBodyBytes. An error because ctx or the timeout
// ended unwraps to context.Canceled or context.DeadlineExceeded. Its
// errors do not name the URL, which may hold a credential: the caller's
// message names it, redacted.
func get(ctx context.Context, client *http.Client, timeout time.Duration, rawURL, accept string) ([]byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := do(client, req)
	if err != nil {
		// net/http's error quotes the URL, whole.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, &statusError{resp.StatusCode}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the body: %w", err)
	}
	if len(data) > maxBodyBytes {
		return nil, nil, fmt.Errorf("body larger than %d bytes", maxBodyBytes)
	}
	return data, resp.Header, nil
}

// maxAge returns how long Cache-Control header values let a response be
// reused: zero for no-store or no-cache (RFC 9111, sections 5.2.2.4 and
// 5.2.2.5; qualified or not, as most caches read a qualified no-cache),
// else the first max-age directive. Directive names are matched without
// regard to case. ok is false when there is neither, or the first max-age
// is malformed.
func maxAge(values []string) (age time.Duration, ok bool) {
	seen := false // a max-age was read
	for _, v := range values {
		for _, d := range strings.Split(v, ",") {
			name, arg, _ := strings.Cut(strings.TrimSpace(d), "=")
			name = strings.TrimSpace(name)
			switch {
			case strings.EqualFold(name, "no-store"), strings.EqualFold(name, "no-cache"):
				return 0, true
			case !strings.EqualFold(name, "max-age") || seen:
				continue
			}
			seen = true
			n, err := strconv.ParseInt(strings.Trim(arg, `"`), 10, 64)
			if err != nil || n < 0 || n > int64(time.Duration(1<<63-1)/time.Second) {
				continue
			}
			age, ok = time.Duration(n)*time.Second, true
		}
	}
	return age, ok
}

// ageOf returns the age an Age header's values give a response (RFC 9111,
// section 5.1): its first value, a number of seconds; zero when there is
// none or it is not a non-negative integer (which a cache ignores).
func ageOf(values []string) time.Duration {
	if len(values) == 0 {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(values[0]), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(min(n, int64(time.Duration(1<<63-1)/time.Second))) * time.Second
}

// lookup returns the key named kid, or without a kid (hasKid false) the
// only key of a set of one. It refreshes the set first when it is due, or
// when the kid is missing (see [RemoteKeySet]); ok is false when there is
// no such key. err is not nil when the set could not tell: kid is not in
// it and its last fetch failed (the provider may have rotated it in), or
// ctx ended while the lookup waited for a fetch; it unwraps to
// ErrKeySetUnavailable, and to ctx's error or the fetch's.
func (s *RemoteKeySet) lookup(ctx context.Context, kid string, hasKid bool) (k crypto.PublicKey, ok bool, err error) {
	s.mu.Lock()
	now := s.now()
	k, ok = find(s.keys, kid, hasKid)
	// A clock stepped back past the start of the last fetch (a Now
	// without a monotonic reading) cannot tell how old the set is: it is
	// due, and the interval does not hold a fetch back until the clock
	// has caught up (a day, for a day's step).
	back := now.Before(s.attempted)
	due := back || !now.Before(s.expires)
	f := s.flight
	switch {
	case !due && (ok || !hasKid):
		// Nothing to refresh.
		s.mu.Unlock()
		return k, ok, nil
	case f != nil && (ok || !hasKid):
		// A refresh is under way: the current set answers meanwhile.
		s.mu.Unlock()
		return k, ok, nil
	case f == nil && !back && now.Sub(s.attempted) < s.minInterval:
		// Too soon after the last fetch to try again: a kid it lacks is
		// unknown, unless that fetch failed.
		err = s.unavailable(ok, hasKid)
		s.mu.Unlock()
		return k, ok, err
	case f == nil:
		f = &flight{done: make(chan struct{})}
		s.flight, s.attempted = f, now
		go s.refresh(context.WithoutCancel(ctx), f, kid, hasKid)
	}
	shown := s.shown
	s.mu.Unlock()
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, false, fmt.Errorf("%w: waiting for a fetch of %s: %w", ErrKeySetUnavailable, shown, ctx.Err())
	}
	s.mu.Lock()
	k, ok = find(s.keys, kid, hasKid)
	err = s.unavailable(ok, hasKid)
	s.mu.Unlock()
	return k, ok, err
}

// current returns the current set, which the caller must not modify, and
// its generation.
func (s *RemoteKeySet) current() (map[string]crypto.PublicKey, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys, s.gen
}

// refetch is the lookup of a token without a kid whose signature none of
// the keys of set generation gen verifies: the provider may have rotated
// its keys. It returns the set fetched since gen, fetching it (at most
// once per MinRefreshInterval, as for a kid the set lacks, and sharing a
// fetch under way), or changed false when there is no newer set. err is
// not nil, as for a lookup (see [RemoteKeySet.lookup]), when there is no
// newer set and the last fetch failed, or ctx ended while it waited.
func (s *RemoteKeySet) refetch(ctx context.Context, gen uint64) (keys map[string]crypto.PublicKey, newGen uint64, changed bool, err error) {
	s.mu.Lock()
	now := s.now()
	back := now.Before(s.attempted)
	f := s.flight
	switch {
	case s.gen != gen:
		keys, newGen = s.keys, s.gen
		s.mu.Unlock()
		return keys, newGen, true, nil
	case f == nil && !back && now.Sub(s.attempted) < s.minInterval:
		err = s.unverified()
		s.mu.Unlock()
		return nil, gen, false, err
	case f == nil:
		f = &flight{done: make(chan struct{})}
		s.flight, s.attempted = f, now
		go s.refresh(context.WithoutCancel(ctx), f, "", false)
	}
	shown := s.shown
	s.mu.Unlock()
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, gen, false, fmt.Errorf("%w: waiting for a fetch of %s: %w", ErrKeySetUnavailable, shown, ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return s.keys, s.gen, true, nil
	}
	return nil, gen, false, s.unverified()
}

// unverified returns the error of a refetch that found no newer set: nil,
// unless the last fetch failed, so that the provider may have rotated in
// the key the token was signed with. s.mu is held.
func (s *RemoteKeySet) unverified() error {
	if s.failed == nil {
		return nil
	}
	return fmt.Errorf("%w: no key of the set verifies the token, which has no kid, and the set's last fetch failed: %w", ErrKeySetUnavailable, s.failed)
}

// unavailable returns the error of a lookup that found a key (ok) or not,
// by kid (hasKid) or not: nil, unless it looked for a kid the set lacks
// and the last fetch of the set failed, so that it cannot tell whether
// the provider has that key. s.mu is held.
func (s *RemoteKeySet) unavailable(ok, hasKid bool) error {
	if ok || !hasKid || s.failed == nil {
		return nil
	}
	return fmt.Errorf("%w: the token's kid is not in the set, whose last fetch failed: %w", ErrKeySetUnavailable, s.failed)
}

// refresh runs flight f, started by a lookup of kid: it fetches the set
// and keeps it if it is good. When the set came from DiscoverKeySet and
// the fetch failed or the set lacks kid, it then reads the issuer's
// metadata again (see rediscover), at most once per minInterval. It ends
// within three fetch timeouts.
func (s *RemoteKeySet) refresh(ctx context.Context, f *flight, kid string, hasKid bool) {
	defer close(f.done)
	s.mu.Lock()
	from := *s.url
	s.mu.Unlock()
	keys, ttl, err := s.fetch(ctx, from)
	s.mu.Lock()
	if err == nil {
		s.keys, s.expires = keys, s.now().Add(ttl)
		s.gen++
	}
	s.failed = err
	reread := false
	_, found := keys[kid]
	if s.disc != nil && (err != nil || hasKid && !found) {
		// Read the clock only for a discovered set: a set of
		// NewRemoteKeySet's reads it as it always has.
		if now := s.now(); now.Before(s.disc.read) || now.Sub(s.disc.read) >= s.minInterval {
			s.disc.read, reread = now, true
		}
	}
	if !reread {
		s.flight = nil
	}
	s.mu.Unlock()
	if err != nil {
		s.report(err)
	}
	if reread {
		if err := s.rediscover(ctx, from); err != nil {
			s.report(err)
		}
		s.mu.Lock()
		s.flight = nil
		s.mu.Unlock()
	}
}

// find looks kid up in keys, or the only key without a kid.
func find(keys map[string]crypto.PublicKey, kid string, hasKid bool) (crypto.PublicKey, bool) {
	if hasKid {
		k, ok := keys[kid]
		return k, ok
	}
	if len(keys) != 1 {
		return nil, false
	}
	for _, k := range keys {
		return k, true
	}
	return nil, false
}
