package token_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// answerFunc is an introspection endpoint in the process: it answers each
// request with the body answer gives for its token.
type answerFunc func(tok string) string

func (f answerFunc) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	form, _ := url.ParseQuery(string(body))
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(f(form.Get("token")))),
		Request:    r,
	}, nil
}

// TestReview28IntrospectorFlood: a flood of distinct tokens, accepted and
// refused, keeps the cache within MaxCacheEntries (the heap grows by a few
// MiB, not with the tokens), and what it drops from the cache is asked
// about again, never taken as an answer: a refused token stays refused,
// and a token revoked meanwhile is refused once its answer has expired;
// an accepted answer still cached is refused past the token's exp.
func TestReview28IntrospectorFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood of 30,000 tokens")
	}
	const n = 30_000
	exp := testNow.Add(time.Hour).Unix()
	var revoked sync.Map
	f := answerFunc(func(tok string) string {
		if _, gone := revoked.Load(tok); gone || strings.HasPrefix(tok, "bad-") {
			return `{"active":false}`
		}
		return `{"active":true,"sub":"u` + strconv.Itoa(len(tok)) + `","aud":"` + introAudience +
			`","exp":` + strconv.FormatInt(exp, 10) + `}`
	})
	clk := &clock{now: testNow}
	i, err := token.NewIntrospector(token.IntrospectionConfig{
		Endpoint: "http://127.0.0.1/introspect", Audience: introAudience,
		Client: &http.Client{Transport: f}, Now: clk.Now, ErrorHandler: func(error) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := i.Introspect(ctx, "bad-victim"); !errors.Is(err, token.ErrInvalidToken) {
		t.Fatalf("bad-victim: %v, want a refusal", err)
	}
	if _, _, err := i.Introspect(ctx, "ok-victim"); err != nil {
		t.Fatalf("ok-victim: %v", err)
	}
	revoked.Store("ok-victim", true)

	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	for k := range n {
		tok := "ok-" + strconv.Itoa(k)
		if k%2 == 1 {
			tok = "bad-" + strconv.Itoa(k)
		}
		i.Introspect(ctx, tok)
		if k%5_000 == 0 {
			if _, _, err := i.Introspect(ctx, "bad-victim"); !errors.Is(err, token.ErrInvalidToken) {
				t.Fatalf("bad-victim after %d tokens: %v, want a refusal", k, err)
			}
		}
	}
	grown := int64(heap()) - int64(before)
	t.Logf("heap grew by %.1f MiB over %d tokens", float64(grown)/(1<<20), n)
	if grown > 6<<20 { // about 3 MiB bounded, 8.6 MiB with no bound
		t.Errorf("heap grew by %d bytes over %d tokens, want the cache bounded (10,000 answers)", grown, n)
	}
	clk.advance(time.Minute) // the CacheTTL
	if _, _, err := i.Introspect(ctx, "ok-victim"); !errors.Is(err, token.ErrInvalidToken) {
		t.Errorf("the revoked ok-victim after the flood and the CacheTTL: %v, want a refusal", err)
	}
	// A token accepted and cached, looked up past its exp.
	if _, _, err := i.Introspect(ctx, "ok-late"); err != nil {
		t.Fatalf("ok-late: %v", err)
	}
	clk.advance(time.Hour - time.Minute)
	if _, _, err := i.Introspect(ctx, "ok-late"); !errors.Is(err, token.ErrInvalidToken) {
		t.Errorf("ok-late at its exp: %v, want a refusal", err)
	}
}
