package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// printPinsSubject and printPinsRoles are the caller --print-pins lists the
// downstream's tools as (the downstream gets them in the gateway's
// identity headers).
const printPinsSubject = "gateway-print-pins"

var printPinsRoles = []string{"admin"}

// loadPins reads the fixed set of --tool-pins, a file of at most
// maxFlagFile bytes.
func loadPins(path string) (*gateway.Pins, error) {
	data, err := readFlagFile("--tool-pins", path)
	if err != nil {
		return nil, err
	}
	p, err := gateway.ParsePins(data)
	if err != nil {
		return nil, fmt.Errorf("--tool-pins %s: %w", path, err)
	}
	return p, nil
}

// printPins lists the tools of upstream through a gateway with
// trust-on-first-use pins (see listWithPins), and writes to w the pins the
// listing made: the file --tool-pins reads. A tool listed twice with two
// definitions keeps the first; the second is logged as withheld. A file
// over the maxFlagFile bytes --tool-pins reads is refused, not written.
func printPins(ctx context.Context, logger *slog.Logger, upstream string, timeout time.Duration, w io.Writer) error {
	return printPinsWith(ctx, logger, upstream, timeout, downstreamAccess{}, w)
}

// downstreamAccess is what the gateway's own requests to the downstream
// need besides its URL: the TLS configuration of --upstream-ca,
// --upstream-cert and --upstream-key (nil: none) and the signer of
// MCP_GATEWAY_SIGN_KEY (nil: none), which a downstream that checks
// signatures needs on every request, listings included.
type downstreamAccess struct {
	tls    *tls.Config
	signer *token.GatewaySigner
}

// printPinsWith is printPins with a's TLS configuration and signer.
func printPinsWith(ctx context.Context, logger *slog.Logger, upstream string, timeout time.Duration, a downstreamAccess, w io.Writer) error {
	pins := gateway.TrustOnFirstUse()
	n, err := listWithPins(ctx, logger, upstream, timeout, a, pins, nil)
	if err != nil {
		return fmt.Errorf("--print-pins: %w", err)
	}
	if n == 0 {
		return errors.New("--print-pins: the downstream lists no tools (every tool it lists was withheld, or it has none)")
	}
	out, err := json.Marshal(pins)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	if buf.Len() > maxFlagFile {
		// A file the gateway would refuse to read: only a downstream far
		// from the specification's names (at most 128 of letters, digits,
		// "_", "-", ".") makes one, 10,000 of them about 2 MB.
		return fmt.Errorf("--print-pins: the downstream's tools make a file of %d bytes, over the 16 MiB --tool-pins reads; nothing written (--pin-tools pins them as they are listed)",
			buf.Len())
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// checkPinsAtStart lists the tools of upstream once through a gateway
// sharing pins (and the audit sink), before the gateway serves: the pins
// learn the downstream's definitions now, so that a tool changed while the
// gateway was down is withheld, and its calls refused, from the first
// request, not from the first listing a client makes. (A client that
// kept its listing from before would otherwise call a changed tool
// unchecked.) A downstream that cannot be listed now is logged, and its
// changes are found at the first listing.
func checkPinsAtStart(ctx context.Context, logger *slog.Logger, upstream string, timeout time.Duration, a downstreamAccess, pins *gateway.Pins, sink audit.Sink) {
	n, err := listWithPins(ctx, logger, upstream, timeout, a, pins, sink)
	if err != nil {
		logger.Warn("tool pins: the downstream's tools could not be listed at start; a changed tool is found at the first listing a client makes", "err", err)
		return
	}
	logger.Info("tool pins: the downstream's tools checked at start", "tools_shown", n)
}

// listWithPins lists the tools of upstream, every page, through a gateway
// of its own holding pins (its records to sink, when not nil), in process
// ([gateway.Gateway.CheckPins]), as the caller printPinsSubject with
// printPinsRoles, and returns how many tools the listing kept. That
// gateway has no policy and no filter, so every tool the downstream lists
// is judged. timeout bounds each wait on the downstream, and twice timeout
// the whole; a gives its TLS configuration and signer (nil: none).
func listWithPins(ctx context.Context, logger *slog.Logger, upstream string, timeout time.Duration, a downstreamAccess, pins *gateway.Pins, sink audit.Sink) (int, error) {
	opts := &gateway.Options{Pins: pins, Timeout: timeout, Logger: logger, TLSConfig: a.tls, Signer: a.signer}
	if sink != nil {
		opts.Audit = sink
	}
	// It serves no one but CheckPins, which needs no token.
	g, err := gateway.New(upstream, gateway.AuthenticatorFunc(notServed), opts)
	if err != nil {
		return 0, err
	}
	limit := 2 * timeout
	if limit < timeout { // overflowed: the flag takes up to math.MaxInt64 ns
		limit = math.MaxInt64
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	n, err := g.CheckPins(ctx, &policy.Principal{Subject: printPinsSubject, Roles: printPinsRoles})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", shownUpstream(upstream), err)
	}
	return n, nil
}

// notServed authenticates for a gateway that serves no one: it refuses
// every token.
func notServed(context.Context, string) (*policy.Principal, error) {
	return nil, errors.New("not served")
}

// stdout is where --print-pins writes (a test's buffer in tests).
var stdout io.Writer = os.Stdout
