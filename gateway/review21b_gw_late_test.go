//go:build unix

package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReview21bLateMemberAfterGuard checks a batch member whose downstream
// answers after the batch's write guard ended a write to the client (which
// stopped reading): its answer is still read for one timeout after that
// write failed, as a single call's is, not one timeout after the member
// was sent. The member ("late") is sent after 15 notifications that take
// half the timeout (16 members go downstream at once), so its wait for the
// headers spans the guard's cut; its body follows 0.4 timeout later.
// Cut at once, its record would say UPSTREAM_UNAVAILABLE although the
// downstream answered.
func TestReview21bLateMemberAfterGuard(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	down := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		json.Unmarshal(body, &msg)
		switch {
		case msg.ID == nil:
			time.Sleep(timeout / 2)
			w.WriteHeader(http.StatusAccepted)
		case msg.Params.Name == "big":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"jsonrpc":"2.0","id":1,"result":{"pad":"`+strings.Repeat("a", 512<<10)+"\"}}\n\n")
		default: // late
			answer := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[]}}`
			time.Sleep(timeout * 8 / 10)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			time.Sleep(timeout * 4 / 10)
			io.WriteString(w, answer)
		}
	})
	sink := &memSink{}
	s := newOwnAnswerRig(t, Options{Timeout: timeout, Audit: sink}, down)
	members := []string{call(`1`, "big", "")}
	for range 15 {
		members = append(members, `{"jsonrpc":"2.0","method":"notifications/x"}`)
	}
	members = append(members, call(`2`, "late", ""))
	s.send(t, "["+strings.Join(members, ",")+"]", "Authorization: "+admin) // and read nothing
	select {
	case <-s.done:
	case <-time.After(9 * time.Second):
		t.Fatal("the batch's handler still runs 9 s after its client stopped reading")
	}
	evs := sink.outcomes("late")
	if len(evs) != 1 {
		t.Fatalf("%d outcome records of late, want 1: %+v", len(evs), evs)
	}
	if e := evs[0]; !e.Allowed || e.Code != "" || e.Detail != clientGone {
		t.Errorf("the late member's record: allowed %v, code %q, detail %q; want allowed, no code, detail %q (its answer read within one timeout of the failed write)",
			e.Allowed, e.Code, e.Detail, clientGone)
	}
}
