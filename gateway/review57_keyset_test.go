package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview57KeySetDownNotJudged: a gateway verifying JWTs against a JWK
// Set URL answered a token signed with a key the provider had just rotated
// in, while the URL was down, 401 invalid_token: the client got a new
// token, naming the same kid, and was refused again for the whole outage.
// Such a token is not judged now: 502 with -32003, as when an
// introspection endpoint fails, and not forwarded; once the set can be
// fetched again, it is forwarded.
func TestReview57KeySetDownNotJudged(t *testing.T) {
	idp := testsvc.StartJWKS(t, "a")
	clock := testsvc.NewClock()
	v := idp.Verifier(t, clock.Now)
	down := &downstream{}
	dsrv := httptest.NewServer(down)
	defer dsrv.Close()
	g, err := New(dsrv.URL+"/mcp", v, &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()
	tokB := idp.Sign(t, "b", testsvc.Claims("ann", "viewer", testsvc.JWKSAudience, time.Now().Add(time.Hour)))
	post := func() (int, string, string) {
		req, err := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(call(`1`, "get_customer_record", `{"q":"x"}`)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tokB)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
	}

	idp.Publish(t, "a", "b")
	idp.SetDown(true)
	clock.Advance(2 * time.Minute)
	status, challenge, body := post()
	if status != http.StatusBadGateway || challenge != "" || !strings.Contains(body, `"code":-32003`) {
		t.Errorf("a token of a key rotated in while the set is down: %d (WWW-Authenticate %q) %s; want 502 -32003, no challenge", status, challenge, body)
	}
	if n := len(down.log()); n != 0 {
		t.Errorf("%d requests forwarded, want none", n)
	}

	idp.SetDown(false)
	clock.Advance(2 * time.Minute)
	if status, _, body := post(); status != http.StatusOK {
		t.Errorf("the same token once the set is back: %d %s; want 200", status, body)
	}
}
