package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview64qStreamRolesDroppedWithDuplicate: a stream "ends once its
// token ... stands for another principal (its roles changed)" (package
// doc). sameCaller compares the roles' count and that each role now was a
// role then: an Authenticator that maps two groups to one role (duplicates
// are accepted by token.CheckPrincipal) and now answers
// [support support] for a principal opened as [support billing] is taken
// for the same caller, and the stream opened with billing goes on after
// billing was taken away.
func TestReview64qStreamRolesDroppedWithDuplicate(t *testing.T) {
	var changed atomic.Bool
	auth := AuthenticatorFunc(func(_ context.Context, tok string) (*policy.Principal, error) {
		if changed.Load() {
			return &policy.Principal{Subject: "ann", Roles: []string{"support", "support"}}, nil
		}
		return &policy.Principal{Subject: "ann", Roles: []string{"support", "billing"}}, nil
	})
	s, d, _ := r64qStream(t, auth)
	defer s.close()
	changed.Store(true)
	close(d.release)
	if ev := s.next(t); strings.Contains(ev, "after-revocation-secret") {
		t.Errorf("the stream opened as [support billing] went on once its token stood for [support support]: got %q", ev)
	}
}

// TestReview64qStreamSurvivesAuthenticatorBlip: the package doc says a
// stream "ends once its token is refused (revoked ...; expired) or stands
// for another principal"; a token the Authenticator cannot judge for a
// moment (ErrAuthenticatorUnavailable: an IdP blip) is not refused, and a
// new request is answered as the upstream's failure, "not 401". The stream
// ended all the same at its next event, logged as "its bearer token is
// refused now": every stream that carried an event during a blip was
// ended, and its client's resumption, asked while the IdP was still down,
// refused 503 (a go-sdk client then fails its session). It stays open.
func TestReview64qStreamSurvivesAuthenticatorBlip(t *testing.T) {
	var blip atomic.Bool
	auth := AuthenticatorFunc(func(_ context.Context, tok string) (*policy.Principal, error) {
		if blip.Load() {
			return nil, ErrAuthenticatorUnavailable
		}
		return &policy.Principal{Subject: "ann", Roles: []string{"support"}}, nil
	})
	s, d, gsURL := r64qStream(t, auth)
	defer s.close()
	blip.Store(true)
	if rep := (&rig{url: gsURL}).post(t, "Bearer tok-1", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); rep.status == http.StatusUnauthorized {
		t.Fatalf("a request during the blip: status %d, want not 401", rep.status)
	}
	close(d.release)
	if ev := s.next(t); !strings.Contains(ev, "after-revocation-secret") {
		t.Errorf("the stream ended on an Authenticator that could not judge its token (not refused): next event %q", ev)
	}
}

// r64qStream opens a GET stream through a gateway with auth in front of an
// r64jDown, and returns once its first event came: the stream, the
// downstream (close its release for the second event) and the gateway's
// URL.
func r64qStream(t *testing.T, auth Authenticator) (*r64jStream, *r64jDown, string) {
	t.Helper()
	d := &r64jDown{release: make(chan struct{})}
	ds := newServer(t, d)
	t.Cleanup(ds.CloseClientConnections)
	g, err := New(ds.URL+"/mcp", auth, &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gs := newServer(t, g)
	t.Cleanup(gs.CloseClientConnections)
	s := r64jOpen(t, gs.URL, "Bearer tok-1", false)
	if !strings.Contains(s.next(t), `"first"`) {
		s.close()
		t.Fatal("the stream's first event did not come")
	}
	return s, d, gs.URL
}
