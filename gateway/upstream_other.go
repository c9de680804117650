//go:build !unix

package gateway

import "net"

// idlePeek cannot peek at a connection on this system: an idle
// connection is assumed usable, and a replayable request that finds it
// closed is sent again on a new one.
type idlePeek struct{}

func (*idlePeek) init(net.Conn) {}
func (*idlePeek) usable() bool  { return true }
