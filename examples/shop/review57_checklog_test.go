package main

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestReview57SessionCheckFailureLogged: every call and listing checks
// the session first, so with the gateway down, failing or misaddressed
// (a --gateway whose path is not the gateway's base: 404 on
// /api/auth/me) every call was refused at its check, and the shop's log
// said nothing at all: the handler's "gateway unavailable" warning, with
// its cause, is never reached, and the caller is told only "the session
// could not be checked" or "answered unexpectedly". The operator had no
// cause to go on. The check now logs a warning with the cause (the
// status, or the transport's error), never the session.
func TestReview57SessionCheckFailureLogged(t *testing.T) {
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	st, err := startStack(defaultConfig(), httpOptions{}, io.Discard, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.stop)
	ada := connect(t, st, sessionCustomer, nil)
	for _, tc := range []struct {
		status int
		code   string
		want   []string
	}{
		{503, "UPSTREAM_UNAVAILABLE", []string{"session check failed", "status=503"}},
		{404, "UNAUTHENTICATED", []string{"session check answered unexpectedly", "status=404"}},
	} {
		before := len(logs.String())
		st.gw.fail("GET", "/api/auth/me", tc.status, `{"error":{"message":"no"}}`, 2)
		if e := toolErr(t, ada, "get_cart", map[string]any{}); e["code"] != tc.code {
			t.Fatalf("gateway %d on the session check: %v, want %s", tc.status, e, tc.code)
		}
		got := logs.String()[before:]
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("gateway %d on the session check: the log does not say %q:\n%s", tc.status, w, got)
			}
		}
	}

	// A gateway nobody listens at: the transport's error names the cause.
	logs2 := &syncBuffer{}
	cfg := defaultConfig()
	cfg.gateway, cfg.stdio, cfg.launch = closedURL(t), true, sessionCustomer
	s, err := newShop(cfg, io.Discard, slog.New(slog.NewTextHandler(logs2, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := connectInMemory(t, s, nil)
	if e := toolErr(t, cs, "get_cart", map[string]any{}); e["code"] != "UPSTREAM_UNAVAILABLE" {
		t.Fatalf("gateway down: %v, want UPSTREAM_UNAVAILABLE", e)
	}
	if got := logs2.String(); !strings.Contains(got, "session check failed") || !strings.Contains(got, "connection refused") {
		t.Errorf("gateway down: the log does not give the cause:\n%s", got)
	}
	for _, l := range []string{logs.String(), logs2.String()} {
		if strings.Contains(l, sessionCustomer) {
			t.Errorf("the log holds the session:\n%s", l)
		}
	}
}

// closedURL returns the URL of a loopback port nobody listens at.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}
