// Package hangup reopens the example binaries' audit files on SIGHUP, the
// signal log rotators send once they have moved a file away (logrotate's
// postrotate step), and runs what else a binary does on it (the gateway
// reloads its --policy file, the ticket server its --config), opening the
// file it reads again with [OpenRegular].
package hangup

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Reopener is a sink that can move to the file its path names now, as
// [github.com/mcpguard/mcpguard/audit.JSONLSink] does.
type Reopener interface {
	Reopen() error
}

// Reopen calls s.Reopen on every SIGHUP the process gets until stop is
// called, and logs the outcome under name. From now on SIGHUP no longer
// ends the process (the Go runtime's default), after stop neither: stop
// comes at shutdown, just before s is closed, and a rotator's SIGHUP then
// must not end the process before s has written what it holds. stop
// returns once no Reopen runs any more; call it before closing s.
//
// A nil s means there is no file to reopen (the audit trail goes to a
// database, or to the log): SIGHUP is then only logged, so that the
// signal a rotator sends every process it was told of never ends one
// without its shutdown, whatever its audit trail.
func Reopen(log *slog.Logger, name string, s Reopener) (stop func()) {
	return Handle(func() { ReopenNow(log, name, s) })
}

// ReopenNow is what [Reopen] does on one SIGHUP: s.Reopen, its outcome
// logged under name, or for a nil s a line saying SIGHUP is ignored.
func ReopenNow(log *slog.Logger, name string, s Reopener) {
	if s == nil {
		log.Info("SIGHUP: no audit file to reopen; ignored")
	} else if err := s.Reopen(); err != nil {
		log.Error("SIGHUP: the audit file could not be reopened; records go on to the file the sink has, if it can still write", "audit", name, "err", err)
	} else {
		log.Info("SIGHUP: audit file reopened", "audit", name)
	}
}

// Handle calls f on every SIGHUP the process gets until stop is called,
// one call at a time, as [Reopen] calls Reopen: from now on SIGHUP no
// longer ends the process, after stop neither, and stop returns once no f
// runs any more. SIGHUPs that come while f runs make one more call at
// most.
func Handle(f func()) (stop func()) {
	keepCaught()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-ch:
				f()
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			// SIGHUP goes on being caught, by keepCaught's channel, rather
			// than ending the process; ch, unregistered, is not kept for
			// the life of the process (one per Handle, a start retried
			// in a loop made them pile up).
			signal.Stop(ch)
			close(done)
			wg.Wait()
		})
	}
}

// keepCaught registers, once in the process, a channel that no one reads
// for SIGHUP (a signal that finds it full is dropped): from the first
// Handle on, SIGHUP is caught, whatever Handle's stops unregister.
var keepCaught = sync.OnceFunc(func() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
})

// OpenRegular opens the file at path for a reload on SIGHUP, refusing it
// unless it is a regular file. What is checked is the file opened, not
// the path before: a named pipe put in its place between a check and the
// open would have the open wait for a writer, and the SIGHUP handler with
// it (and the shutdown, which waits for the handler). The open does not
// wait (O_NONBLOCK), nor makes a terminal the process's (O_NOCTTY). Its
// error for a file that is not regular is an *fs.PathError, as the open's,
// that names the file's type.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("not a regular file (%v)", st.Mode().Type())}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
