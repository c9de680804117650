package token

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
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
// The document is read once, here: the returned set fetches its keys again
// from the jwks_uri found now, and a provider that moves its jwks_uri needs
// a new call (for a server, a restart). It returns an error for an issuer
// or options that NewRemoteKeySet would refuse, a failed fetch, a document
// that does not pass these checks, and whatever NewRemoteKeySet returns for
// the jwks_uri. Its errors show URLs without user info, query or fragment,
// and never the document's body.
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
	return NewRemoteKeySet(ctx, jwksURI, opts)
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
