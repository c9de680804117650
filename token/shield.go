package token

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/mcpguard/mcpguard/internal/logsafe"
)

// Introspector and RemoteKeySet call operator code (an http.Client's
// Transport, an ErrorHandler) on goroutines of their own, where a panic
// would end the process instead of reaching a caller. They contain it:
// it is logged to slog.Default at Error, with its stack and the type of
// its value but not the value (which may quote the request: a token, the
// client's credentials); a client's panic fails its request.

// errClientPanicked is the error of a request whose client panicked.
var errClientPanicked = errors.New("the HTTP client panicked")

// do is client.Do(req), with a panic of the client's contained.
func do(client *http.Client, req *http.Request) (resp *http.Response, err error) {
	defer func() {
		if v := recover(); v != nil {
			logPanic("an HTTP client", v)
			resp, err = nil, errClientPanicked
		}
	}()
	return client.Do(req)
}

// shieldReport returns report with its panics contained.
func shieldReport(report func(error)) func(error) {
	return func(err error) {
		defer func() {
			if v := recover(); v != nil {
				logPanic("an ErrorHandler", v)
			}
		}()
		report(err)
	}
}

func logPanic(what string, v any) {
	logsafe.Logger(slog.Default()).Error("token: "+what+" panicked", "panic_type", fmt.Sprintf("%T", v), "stack", string(debug.Stack()))
}
