package stdio

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStopLogsRefusalsOnce: a client that pipelines its requests keeps
// sending after the stop, and each request read then is answered -32004.
// That is the stop working, not a fault of each line: the log says so
// once, at the first, and counts the rest in one line when the input
// ends. Before, each refused request was a warning of its own: a graceful
// stop of a busy server wrote one warning per request it refused (1491 in
// one run of the refund binary with a client piping pings).
func TestStopLogsRefusalsOnce(t *testing.T) {
	h := newStopHarness(t, 10*time.Second)
	h.send(callLine("2", "hold"))
	h.waitStarted(1)
	close(h.stop)
	const n = 50
	for i := range n {
		h.send(`{"jsonrpc":"2.0","id":"p-` + strconv.Itoa(i) + `","method":"ping"}`)
	}
	waitLines(t, h.out, 1+n)
	if got := strings.Count(h.out.String(), `"code":-32004`); got != n {
		t.Fatalf("%d answers -32004, want %d:\n%s", got, n, h.out)
	}
	h.releaseCalls()
	if err := h.waitRun(10 * time.Second); err != nil {
		t.Errorf("Run after the stop: %v, want nil", err)
	}
	logs := h.logs()
	if c := strings.Count(logs, "code=-32004"); c != 1 {
		t.Errorf("%d log lines for the requests refused after the stop, want 1 (the first):\n%s", c, logs)
	}
	if !strings.Contains(logs, "refused the requests read after the stop") || !strings.Contains(logs, "requests="+strconv.Itoa(n)) {
		t.Errorf("no line counts the %d requests refused after the stop:\n%s", n, logs)
	}
}
