package token_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview18FetchErrorsUnwrapContext: NewRemoteKeySet and DiscoverKeySet
// whose context ends (a deadline at start-up, a cancelled start) during a
// fetch return an error that unwraps to the context's error, before the
// response or while its body is read, as an Introspector's do, so that a
// caller can tell "gave up" from "the provider answered badly".
func TestReview18FetchErrorsUnwrapContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	stall := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"keys":[`))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	silent := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	srv := newIDPServer(t)
	srv.route("/stall", stall)
	srv.route("/silent", silent)
	issuerStall, issuerSilent := newIDPServer(t), newIDPServer(t)
	issuerStall.route(oidcPath, stall)
	issuerSilent.route(oidcPath, silent)

	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"set_body", func(ctx context.Context) error {
			_, err := token.NewRemoteKeySet(ctx, srv.URL+"/stall", nil)
			return err
		}},
		{"set_headers", func(ctx context.Context) error {
			_, err := token.NewRemoteKeySet(ctx, srv.URL+"/silent", nil)
			return err
		}},
		{"document_body", func(ctx context.Context) error {
			_, err := token.DiscoverKeySet(ctx, issuerStall.URL, nil)
			return err
		}},
		{"document_headers", func(ctx context.Context) error {
			_, err := token.DiscoverKeySet(ctx, issuerSilent.URL, nil)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			if err := tc.call(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("deadline: err %v, want one that unwraps to context.DeadlineExceeded", err)
			}
			ctx, cancel = context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			if err := tc.call(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled: err %v, want one that unwraps to context.Canceled", err)
			}
		})
	}
}
