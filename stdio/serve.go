package stdio

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrStopTimeout is what [Serve] returns when the session has not ended
// within its grace after the stop: a call under way ignored its
// cancellation, and its answer is lost.
var ErrStopTimeout = errors.New("stdio: the session did not end within its grace after the stop")

// errServedTwice is what [Serve] returns for a transport already served.
var errServedTwice = errors.New("stdio: the transport is served already (two sessions would share its input); serve it once")

// Serve serves server over t until the session ends, and returns how it
// ended: nil when the client ended it (end of input) or a stop drained it.
// t is the transport [Isolate] returned with ctx's Done channel as
// [Options.Stop] (or a transport wrapping it). The session is served with
// a context ctx's end does not cancel: [mcp.Server.Run] would close the
// session as soon as ctx is done, and the go-sdk would then write no
// answer of the calls still running; the stop's drain ends the session
// instead, once they are answered. When ctx ends, Serve calls stopping,
// if not nil (to log the stop, say), and waits at most grace more for the
// session to end: give the transport's DrainTimeout and a little more
// (past the drain, the go-sdk cancels the calls still running). A call
// that ignores its cancellation does not hold Serve beyond that: it
// returns ErrStopTimeout, and that call's answer is lost.
//
// Serve a transport once: a second call with the transport Isolate
// returned (while the first serves it, as after ErrStopTimeout, or after)
// returns an error at once, as a second session would share the input of
// the first. So does a call with a nil server or transport.
func Serve(ctx context.Context, server *mcp.Server, t mcp.Transport, grace time.Duration, stopping func()) error {
	if server == nil {
		return errors.New("stdio: Serve with a nil server")
	}
	if it, ok := t.(*mcp.IOTransport); t == nil || ok && it == nil {
		return errors.New("stdio: Serve with a nil transport (did Isolate fail?)")
	}
	if it, ok := t.(*mcp.IOTransport); ok {
		if r, ok := it.Reader.(*reader); ok && !r.served.CompareAndSwap(false, true) {
			return errServedTwice
		}
	}
	ss, err := server.Connect(context.WithoutCancel(ctx), t, nil)
	if err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended:
		return err
	case <-ctx.Done():
	}
	if stopping != nil {
		stopping()
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case err := <-ended:
		return err
	case <-timer.C:
		return ErrStopTimeout
	}
}
