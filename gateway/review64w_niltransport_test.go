package gateway

import (
	"net/http"
	"testing"
)

// TestReview64wNilTransportPointer: Transport "nil means the gateway's own
// client", and New refuses a nil pointer as Audit (one whose every record
// fails). A nil *http.Transport (a variable left unset on one branch) was
// taken by New, and every call then panicked in RoundTrip: -32603, 500
// INTERNAL, never forwarded. New must refuse it, or use its own client.
func TestReview64wNilTransportPointer(t *testing.T) {
	var tr *http.Transport
	d := &downstream{}
	dsrv := newServer(t, d)
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Transport: tr, Logger: discardLogger()})
	if err != nil {
		return // refused: as good
	}
	rg := &rig{down: d, dsrv: dsrv, gw: newServer(t, g)}
	rg.url = rg.gw.URL
	got := rg.post(t, viewer, call("1", "get_customer_record", ""))
	if got.status != 200 || len(d.log()) != 1 {
		t.Errorf("a nil *http.Transport: New took it, and a call was answered %d %s (%d forwarded); "+
			"want New to refuse it, or the call forwarded", got.status, got.body, len(d.log()))
	}
}
