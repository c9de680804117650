//go:build !unix

package gateway

import "testing"

// refusingAddr returns a loopback host:port nothing listens on: one a
// listener just left (another may be given it meanwhile; see the unix
// version).
func refusingAddr(t *testing.T) string {
	t.Helper()
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
