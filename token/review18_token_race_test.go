package token_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview18SharedVerifierDuringMoves: one verifier shared by many
// goroutines while its discovered set is refreshed, fails, and moves to a
// new jwks_uri again and again. Run with -race. A token of a key that is
// in every set the provider publishes is never refused; made-up kids are
// refused; String, read meanwhile, is always one of the set's URLs; and
// the set ends at the last URL the document names.
func TestReview18SharedVerifierDuringMoves(t *testing.T) {
	a := edKey(t)
	set := json.RawMessage(jwks(t, jwk(t, "a", a.Public())))
	f := newDiscovered(t, set, token.RemoteKeySetOptions{MinRefreshInterval: time.Second, MaxAge: time.Second})
	const moves = 12
	for n := 2; n <= moves; n++ {
		f.srv.route(fmt.Sprint("/keys", n), serveJSON(t, set))
	}
	good := f.token(t, a, "a")
	var madeUp []string
	for n := range 4 {
		madeUp = append(madeUp, f.token(t, a, fmt.Sprint("x", n)))
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	var refusedGood, acceptedMadeUp atomic.Int64
	var badString atomic.Value
	for n := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, _, err := f.v.Verify(good); err != nil {
					refusedGood.Add(1)
				}
				if _, _, err := f.v.Verify(madeUp[n%len(madeUp)]); err == nil {
					acceptedMadeUp.Add(1)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if s := f.set.String(); !strings.HasPrefix(s, f.srv.URL+"/keys") {
				badString.Store(s)
			}
		}
	}()
	for n := 2; n <= moves; n++ {
		// The old URL goes away and the document names the next one.
		f.srv.route(fmt.Sprint("/keys", n-1), answer(404))
		f.srv.route(oidcPath, serveJSON(t, metadata(f.issuer, fmt.Sprint(f.srv.URL, "/keys", n))))
		f.clock.advance(2 * time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	// A refresh may still be under way: lookups past the interval follow
	// the last move, if the goroutines' have not.
	want := fmt.Sprint(f.srv.URL, "/keys", moves)
	for deadline := time.Now().Add(10 * time.Second); f.set.String() != want && time.Now().Before(deadline); {
		f.clock.advance(2 * time.Second)
		f.verify(t, "key a after the moves", good, "")
		time.Sleep(10 * time.Millisecond)
	}

	if n := refusedGood.Load(); n != 0 {
		t.Errorf("key a refused %d times during the moves, want never", n)
	}
	if n := acceptedMadeUp.Load(); n != 0 {
		t.Errorf("made-up kids accepted %d times", n)
	}
	if s := badString.Load(); s != nil {
		t.Errorf("String() = %q during the moves", s)
	}
	if got := f.set.String(); got != want {
		t.Errorf("String() = %q after the moves, want %q", got, want)
	}
}
