package token_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// TestReview64pStreamSurvivesVerifierBlip: BindSessions' doc says a
// session's GET stream ends "once verify refuses its token (expired,
// revoked ...), or gives another user", and it tells a refusal (an error
// that unwraps to auth.ErrInvalidToken: 401) from a verify that could not
// judge the token (any other error, "the identity provider did not
// answer": 503, to be sent again). The recheck before each write of the
// stream takes any error as a refusal: one failed lookup at the identity
// provider (a single blip, the token still valid) ends the stream, and the
// notification being written then is lost (no EventStore: nothing
// replays it); the client is never told the server's tools changed.
func TestReview64pStreamSurvivesVerifierBlip(t *testing.T) {
	var blip, blipped atomic.Bool
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		if tok != "tok-ann" {
			return nil, auth.ErrInvalidToken
		}
		if blip.CompareAndSwap(true, false) {
			blipped.Store(true)
			return nil, errors.New("introspection endpoint: 502 Bad Gateway") // not a refusal
		}
		return &auth.TokenInfo{UserID: "ann", Expiration: time.Now().Add(time.Hour)}, nil
	}
	_, _, tool, told := r64jOpenStream(t, verify)

	// One lookup fails (the identity provider blips), then all is well.
	blip.Store(true)
	tool("during")
	select {
	case <-told:
	case <-time.After(2 * time.Second):
		t.Fatalf("a tools/list_changed sent while verify failed once (not a refusal; blipped=%v) "+
			"never reached the client: the stream ended and the notification was lost", blipped.Load())
	}
}
