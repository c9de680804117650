package token_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestIntrospectorBodyTimeoutIsDeadlineExceeded: Timeout bounds a request
// "from its start to the end of the answer's body", and a timeout "of the
// request" unwraps to context.DeadlineExceeded (ErrIntrospectionFailed's
// doc), so that a gateway answers 504. An endpoint that sends its header
// and then stalls in the middle of the body times out there: the error
// must unwrap to context.DeadlineExceeded too, as one that stalls before
// its header does.
func TestIntrospectorBodyTimeoutIsDeadlineExceeded(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"active": true, `))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	i, err := token.NewIntrospector(token.IntrospectionConfig{
		Endpoint: srv.URL + "/introspect", Audience: "https://mcp.example/mcp",
		Timeout: 100 * time.Millisecond, ErrorHandler: func(error) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = i.Introspect(context.Background(), "opq_stalled_body")
	if !errors.Is(err, token.ErrIntrospectionFailed) {
		t.Fatalf("err %v: want ErrIntrospectionFailed", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v: a timeout while reading the answer's body does not unwrap to context.DeadlineExceeded (a gateway answers 502, not 504)", err)
	}
}
