package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReview27StrangerBodyNotHeld: a POST without a token, or with an
// unknown one, is refused before its body is read past 64 KiB. Before, the
// gateway read up to MaxBodyBytes (4 MiB) of it first (and answered 100
// Continue for it): sixty callers without a token held 300 MB of the
// gateway's memory until its timeout. Here the client declares 4,000,000
// bytes and sends none: the 401 must come at once, and the connection end.
func TestReview27StrangerBodyNotHeld(t *testing.T) {
	rg := newRig(t, &Options{Timeout: 5 * time.Second})
	u, err := url.Parse(rg.url)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, hdr string }{
		{"no_token", ""},
		{"unknown_token", "Authorization: Bearer nobody-token\r\n"},
		{"expect_continue", "Expect: 100-continue\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(3 * time.Second))
			req := "POST /mcp HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/json\r\n" +
				"Accept: application/json, text/event-stream\r\n" + tc.hdr + "Content-Length: 4000000\r\n\r\n"
			if _, err := io.WriteString(c, req); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer before the body came: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"id":null`) {
				t.Fatalf("answer %d %s, want 401 with a null id", resp.StatusCode, body)
			}
			if !resp.Close {
				t.Errorf("the connection is kept open for a body of 4,000,000 bytes nobody will read")
			}
		})
	}
	if n := len(rg.down.log()); n != 0 {
		t.Errorf("the downstream received %d requests, want none", n)
	}
}

// TestReview27StrangerSmallBodyKeepsID: a refused request without a token
// whose body is small is still answered with its id, and its tools/call
// recorded, as before; a body over 64 KiB (chunked, no length declared)
// is answered with a null id.
func TestReview27StrangerSmallBodyKeepsID(t *testing.T) {
	rg := newRig(t, &Options{})
	got := rg.post(t, "", call(`"abc"`, "get_customer_record", `{}`))
	if got.status != http.StatusUnauthorized || !strings.Contains(got.body, `"id":"abc"`) {
		t.Errorf("small body: %d %s, want 401 with id \"abc\"", got.status, got.body)
	}
	big := call(`"abc"`, "get_customer_record", `{"pad":"`+strings.Repeat("x", 70<<10)+`"}`)
	req, err := http.NewRequest(http.MethodPost, rg.url+"/mcp", io.MultiReader(strings.NewReader(big)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), `"id":null`) {
		t.Errorf("body of %s bytes: %d %s, want 401 with a null id", strconv.Itoa(len(big)), resp.StatusCode, b)
	}
}
