package stdio

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options select the files [Isolate] works on. A nil *Options means the
// process's own standard streams.
type Options struct {
	// Stdin is the file the JSON-RPC channel reads from. Nil means os.Stdin.
	// After Isolate its descriptor reads the null device.
	Stdin *os.File
	// Stdout is the file the JSON-RPC channel writes to. Nil means
	// os.Stdout. After Isolate its descriptor writes to Stderr.
	Stdout *os.File
	// Stderr receives everything written to Stdout's descriptor after
	// Isolate. Nil means os.Stderr.
	Stderr *os.File
	// DrainTimeout is how long the transport holds back the end of its
	// input while requests already read are still unanswered, so that a
	// client that writes its requests and closes stdin at once still gets
	// every answer (the go-sdk ends the session at end of input and drops
	// answers in flight). Zero means 5 seconds; negative turns draining off.
	DrainTimeout time.Duration
}

// Isolate moves the JSON-RPC channel of a stdio server off the standard
// descriptors and returns a transport over private copies of them. After it
// returns, writes to the standard output descriptor go to standard error
// and reads from the standard input descriptor see end of file; only the
// returned transport reads and writes the channel. Closing the transport
// closes the copies, so the client sees end of file on the server's output.
// At end of input the transport waits (up to Options.DrainTimeout) for the
// answers to requests already read, then reports end of file.
//
// Isolate must be called once, before other goroutines use the standard
// streams. It returns an error, leaving the descriptors as they were, when a
// descriptor cannot be duplicated or redirected. See the package
// documentation for the platforms where the redirection is done on the
// descriptors and where it falls back to the os variables.
func Isolate(opts *Options) (*mcp.IOTransport, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	std := o.Stdin == nil && o.Stdout == nil && o.Stderr == nil
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Stdout.Fd() == o.Stderr.Fd() {
		return nil, errors.New("stdio: stdout and stderr are the same descriptor")
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("stdio: opening %s: %w", os.DevNull, err)
	}
	defer null.Close()
	in, out, err := isolate(o.Stdin, o.Stdout, o.Stderr, null, std)
	if err != nil {
		return nil, fmt.Errorf("stdio: %w", err)
	}
	if o.DrainTimeout < 0 {
		return &mcp.IOTransport{Reader: in, Writer: out}, nil
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = 5 * time.Second
	}
	f := newInflight()
	return &mcp.IOTransport{
		Reader: &drainReader{r: in, f: f, timeout: o.DrainTimeout},
		Writer: &countingWriter{w: out, f: f},
	}, nil
}
