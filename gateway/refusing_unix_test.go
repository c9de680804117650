//go:build unix

package gateway

import (
	"strconv"
	"syscall"
	"testing"
)

// refusingAddr returns a loopback host:port that refuses connections for
// the rest of the test: a socket bound to it that does not listen holds
// the port, so that no other test's listener (of this process or another
// package's, run alongside) can be given it meanwhile, as one was a port
// a closed listener had left (a "refused" downstream answered 401).
func refusingAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("socket name %T", sa)
	}
	return "127.0.0.1:" + strconv.Itoa(in4.Port)
}
