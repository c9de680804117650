package token_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview20RemoteKeySetFormatHidesCredentials: a JWK Set URL may hold a
// credential (a password, an "?api_key="), which String and the errors
// leave out. Printing the set with another verb than %v or %s (%#v in a
// debug dump of a config, %+d, %x of a struct) printed its fields, the URL
// whole among them. A Table and an Introspector print their String for
// every verb; a RemoteKeySet does too, for a set made by NewRemoteKeySet
// and one made by DiscoverKeySet alike.
func TestReview20RemoteKeySetFormatHidesCredentials(t *testing.T) {
	const secret, password = "s3cret-query-key", "pa55word"
	a := edKey(t)
	srv := newJWKSServer(t, jwks(t, jwk(t, "a", a.Public())))
	raw := strings.Replace(srv.URL, "http://", "http://svc:"+password+"@", 1) + "/jwks.json?api_key=" + secret
	set, err := token.NewRemoteKeySet(context.Background(), raw, nil)
	if err != nil {
		t.Fatalf("NewRemoteKeySet: %v", err)
	}
	idp := newIDPServer(t)
	idp.route("/keys", serveJSON(t, map[string]any{"keys": []any{jwk(t, "a", a.Public())}}))
	idp.route("/.well-known/openid-configuration", serveJSON(t, metadata(idp.URL, strings.Replace(idp.URL, "http://", "http://svc:"+password+"@", 1)+"/keys?api_key="+secret)))
	disc, err := token.DiscoverKeySet(context.Background(), idp.URL, nil)
	if err != nil {
		t.Fatalf("DiscoverKeySet: %v", err)
	}
	for what, s := range map[string]*token.RemoteKeySet{"NewRemoteKeySet": set, "DiscoverKeySet": disc} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%+d"} {
			got := fmt.Sprintf(verb, s)
			if strings.Contains(got, secret) || strings.Contains(got, password) {
				t.Errorf("%s: Sprintf(%q) = %.300q: shows the URL's credential", what, verb, got)
			}
		}
		if got, want := fmt.Sprintf("%#v", s), s.String(); got != want {
			t.Errorf("%s: Sprintf(%%#v) = %.300q, want String's %q", what, got, want)
		}
	}
}
