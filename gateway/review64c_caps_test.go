package gateway

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview64cGatewayCapsUnderChaos races tools/calls of two principals
// through the gateway to a downstream that answers quickly or slowly, in
// JSON or an event stream, fails (500) or drops the connection, with
// clients that hang up at random moments: the downstream never works on
// more calls at once than the global in-flight cap, and once every call
// has ended a full set of calls at the cap is forwarded at once.
func TestReview64cGatewayCapsUnderChaos(t *testing.T) {
	const gmax = 2
	var mu sync.Mutex
	working, most := 0, 0
	hold := make(chan struct{})
	var holding sync.WaitGroup
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					M string `json:"m"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		mu.Lock()
		working++
		most = max(most, working)
		mu.Unlock()
		done := func() { // before the answer's last byte: the call may end then
			mu.Lock()
			working--
			mu.Unlock()
		}
		answer := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[]}}`
		switch msg.Params.Arguments.M {
		case "hold":
			holding.Done()
			<-hold
		case "slow":
			time.Sleep(20 * time.Millisecond)
		case "fail":
			done()
			http.Error(w, "down", http.StatusInternalServerError)
			return
		case "drop":
			time.Sleep(5 * time.Millisecond)
			done()
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
			return
		case "sse":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
			http.NewResponseController(w).Flush()
			time.Sleep(10 * time.Millisecond)
			done()
			io.WriteString(w, "event: message\ndata: "+answer+"\n\n")
			return
		}
		done()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: gmax},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Timeout: 2 * time.Second, Logger: discardLogger(), Limiter: lim, Audit: &memSink{}})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	post := func(ctx context.Context, tok, m string, id int) int {
		body := call(strconv.Itoa(id), "echo", `{"m":"`+m+`"}`)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	modes := []string{"ok", "slow", "fail", "drop", "sse"}
	var wg sync.WaitGroup
	for c := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 64))
			tok := admin
			if c%2 == 1 {
				tok = viewer
			}
			for i := range 25 {
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(3) == 0 {
					time.AfterFunc(time.Duration(rng.IntN(25))*time.Millisecond, cancel)
				}
				post(ctx, tok, modes[rng.IntN(len(modes))], c*100+i)
				cancel()
			}
		}()
	}
	wg.Wait()
	// Calls whose client hung up may still be read: give them time.
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	t.Logf("at most %d calls at once downstream", most)
	if most > gmax {
		t.Errorf("the downstream worked on %d calls at once; the global cap is %d", most, gmax)
	}
	mu.Unlock()
	holding.Add(gmax)
	codes := make(chan int, gmax)
	for i, tok := range []string{admin, viewer} {
		go func() { codes <- post(context.Background(), tok, "hold", 9000+i) }()
	}
	waited := make(chan struct{})
	go func() { holding.Wait(); close(waited) }()
	select {
	case <-waited:
	case code := <-codes:
		t.Errorf("after every call ended, a call at the cap was answered %d before the others were forwarded", code)
	case <-time.After(3 * time.Second):
		t.Errorf("after every call ended, %d calls at the cap were not all forwarded", gmax)
	}
	close(hold)
}
