package token

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The well-known paths of an authorization server's metadata.
const (
	// oidcDiscoveryPath follows the issuer's path: OpenID Connect
	// Discovery 1.0, section 4.
	oidcDiscoveryPath = "/.well-known/openid-configuration"
	// oauthMetadataPath goes between the issuer's host and its path: RFC
	// 8414, section 3.
	oauthMetadataPath = "/.well-known/oauth-authorization-server"
)

// DiscoverKeySet finds the "jwks_uri" of the authorization server issuer in
// its metadata and returns [NewRemoteKeySet] of it, with opts.
//
// The issuer must be an https URL, or http to a loopback host as for
// NewRemoteKeySet, without user info, query or fragment. DiscoverKeySet
// first GETs its OpenID Connect discovery document (OpenID Connect
// Discovery 1.0, section 4): the issuer without a terminating "/",
// followed by "/.well-known/openid-configuration". Only when that answers
// 404 Not Found does it GET the issuer's OAuth 2.0 authorization server
// metadata (RFC 8414, section 3): "/.well-known/oauth-authorization-server"
// inserted between the issuer's host and its path, so that
// https://idp.example/tenant is read at
// https://idp.example/.well-known/oauth-authorization-server/tenant. Any
// other failure (another status, a network error, a timeout) is an error,
// and no further URL is tried. Each fetch is made as the set makes its own:
// through opts' Client, within its Timeout, following a redirect only to a
// URL that NewRemoteKeySet would accept, and requiring status 200 and a
// body of at most 1 MiB.
//
// The document must be a JSON object whose "issuer" is a string equal to
// issuer, byte for byte (a terminating "/" counts), so that one server's
// metadata cannot make tokens of this issuer be verified with another's
// keys (a mix-up attack: OpenID Connect Discovery 1.0, section 4.3; RFC
// 8414, section 3.3); and whose "jwks_uri" is a string that
// NewRemoteKeySet accepts. Its other members are ignored.
//
// The returned set fetches its keys again from the jwks_uri found now, and
// follows a provider that moves its jwks_uri: when a refresh of the set
// fails (the old URL answers 404 or 410, say), or succeeds without the kid
// of the token that caused it, the set reads the document again, at the
// URL it was found at now, at most once per
// [RemoteKeySetOptions.MinRefreshInterval] however many tokens arrive (so
// a flood of made-up kids adds at most one read of the document to each
// fetch of the set). The document read again is checked as here; when it
// names another jwks_uri whose set can be fetched, the set uses that URL
// (shown by String) and those keys from then on. A document that fails,
// or a new jwks_uri whose set cannot be fetched, is reported to
// [RemoteKeySetOptions.ErrorHandler] and changes nothing: the set's URL
// and last good keys stay in use.
//
// It returns an error for an issuer or options that NewRemoteKeySet would
// refuse, a failed fetch, a document that does not pass these checks, and
// whatever NewRemoteKeySet returns for the jwks_uri; a fetch cut short by
// ctx or the Timeout unwraps to ctx's error, as NewRemoteKeySet's does.
// Its errors, and those it reports later, show URLs without user info,
// query or fragment, and never the document's body.
func DiscoverKeySet(ctx context.Context, issuer string, opts *RemoteKeySetOptions) (*RemoteKeySet, error) {
	u, err := checkServerURL(issuer, "an issuer", false)
	if err != nil {
		return nil, fmt.Errorf("token: issuer %s: discovery needs an https URL (http only to a loopback host): %w", redactURL(issuer), err)
	}
	o, err := checkOptions(opts)
	if err != nil {
		return nil, err
	}
	client, timeout := newClient(o.Client), cmpOr(o.Timeout, defaultFetchTimeout)
	// The issuer has no user info, query or fragment: every URL below is
	// shown whole.
	origin, path := u.Scheme+"://"+u.Host, strings.TrimSuffix(u.EscapedPath(), "/")
	where := origin + path + oidcDiscoveryPath
	data, _, err := get(ctx, client, timeout, where, "application/json")
	if se := (*statusError)(nil); errors.As(err, &se) && se.code == http.StatusNotFound {
		where = origin + oauthMetadataPath + path
		data, _, err = get(ctx, client, timeout, where, "application/json")
	}
	if err != nil {
		return nil, fmt.Errorf("token: discovery document %s: %w", where, err)
	}
	jwksURI, err := readMetadata(data, issuer)
	if err != nil {
		return nil, fmt.Errorf("token: discovery document %s: %w", where, err)
	}
	s, err := NewRemoteKeySet(ctx, jwksURI, opts)
	if err != nil {
		return nil, err
	}
	// No lookup has the set yet: its fields need no lock here.
	s.disc = &discovery{issuer: issuer, where: where, read: s.attempted}
	return s, nil
}

// A discovery is the issuer's metadata document that a RemoteKeySet's URL
// was found in.
type discovery struct {
	issuer string
	where  string    // the document's URL: no user info, query or fragment
	read   time.Time // start of the last read; guarded by the set's mu
}

// rediscover reads the set's metadata document again, at the URL it was
// found at, and checks it as DiscoverKeySet does. When it names a jwks_uri
// other than from, the URL the set was just fetched from, and the set
// there can be fetched, the set uses that URL and those keys from then on.
// Otherwise nothing changes, and a failure is returned.
func (s *RemoteKeySet) rediscover(ctx context.Context, from string) error {
	d := s.disc
	fail := func(err error) error {
		return fmt.Errorf("token: JWK Set %s: reading the discovery document %s again: %w; the set's URL and keys are kept", redactURL(from), d.where, err)
	}
	data, _, err := get(ctx, s.client, s.timeout, d.where, "application/json")
	if err != nil {
		return fail(err)
	}
	jwksURI, err := readMetadata(data, d.issuer)
	if err != nil {
		return fail(err)
	}
	if jwksURI == from {
		return nil
	}
	keys, ttl, err := s.fetch(ctx, jwksURI)
	if err != nil {
		return fail(fmt.Errorf(`the set at its new "jwks_uri": %w`, err))
	}
	s.mu.Lock()
	s.url, s.shown, s.keys, s.expires = hide(jwksURI), redactURL(jwksURI), keys, s.now().Add(ttl)
	s.gen++
	s.failed = nil
	s.mu.Unlock()
	return nil
}

// readMetadata returns the "jwks_uri" of the metadata document data, after
// checking that its "issuer" is issuer and that NewRemoteKeySet accepts the
// jwks_uri.
func readMetadata(data []byte, issuer string) (string, error) {
	// A map matches member names exactly, where a struct would take
	// "ISSUER" for "issuer".
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil || doc == nil {
		return "", errors.New("not a JSON object")
	}
	var iss, jwksURI string
	if json.Unmarshal(doc["issuer"], &iss) != nil || iss == "" {
		return "", errors.New(`no "issuer" string`)
	}
	if iss != issuer {
		return "", fmt.Errorf(`"issuer" is %s, want %q exactly (the metadata of another issuer, or a mix-up)`, showValue(iss), issuer)
	}
	if json.Unmarshal(doc["jwks_uri"], &jwksURI) != nil || jwksURI == "" {
		return "", errors.New(`no "jwks_uri" string`)
	}
	if err := checkKeySetURL(jwksURI); err != nil {
		return "", fmt.Errorf(`"jwks_uri" %s: %w`, showValue(jwksURI), err)
	}
	return jwksURI, nil
}

// showValue returns a URL read from a document for an error: without user
// info, query or fragment, and no longer than a URL is likely to be.
func showValue(s string) string {
	if len(s) > 512 {
		return fmt.Sprintf("(%d bytes)", len(s))
	}
	return fmt.Sprintf("%q", redactURL(s))
}
