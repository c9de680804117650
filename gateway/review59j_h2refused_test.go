package gateway

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// review59jH2Frame writes one HTTP/2 frame.
func review59jH2Frame(w io.Writer, typ, flags byte, stream uint32, payload []byte) {
	var h [9]byte
	h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	h[3], h[4] = typ, flags
	binary.BigEndian.PutUint32(h[5:], stream)
	w.Write(append(h[:], payload...))
}

// TestReview59jH2RefusedStreamRetried: through net/http's Transport
// (Options.Transport) to an HTTP/2 downstream, a tools/call the downstream
// refused unprocessed (RST_STREAM REFUSED_STREAM, RFC 9113 section 8.7;
// likewise the streams past a GOAWAY's last id) was sent again on a new
// stream before b63b5be; without GetBody net/http's HTTP/2 Transport cannot
// ("define Request.GetBody"), and the client gets 502 for a call that never
// ran. Only a POST with an Idempotency-Key (or X-Idempotency-Key) needs
// GetBody withheld: without one net/http's HTTP/1 Transport never sends a
// written POST again.
func TestReview59jH2RefusedStreamRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var refused, ran atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				pre := make([]byte, 24)
				if _, err := io.ReadFull(c, pre); err != nil {
					return
				}
				review59jH2Frame(c, 4, 0, 0, nil)
				bodies := map[uint32][]byte{}
				for {
					var h [9]byte
					if _, err := io.ReadFull(c, h[:]); err != nil {
						return
					}
					n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
					p := make([]byte, n)
					if _, err := io.ReadFull(c, p); err != nil {
						return
					}
					typ, flags, sid := h[3], h[4], binary.BigEndian.Uint32(h[5:])&0x7fffffff
					switch typ {
					case 4:
						if flags&1 == 0 {
							review59jH2Frame(c, 4, 1, 0, nil)
						}
						continue
					case 0:
						bodies[sid] = append(bodies[sid], p...)
					case 1:
						bodies[sid] = append(bodies[sid], nil...)
					default:
						continue
					}
					if flags&1 == 0 {
						continue
					}
					body := bodies[sid]
					if strings.Contains(string(body), "tools/call") && refused.Add(1) == 1 {
						review59jH2Frame(c, 3, 0, sid, []byte{0, 0, 0, 7}) // REFUSED_STREAM
						continue
					}
					var m struct {
						ID json.RawMessage `json:"id"`
					}
					json.Unmarshal(body, &m)
					if strings.Contains(string(body), "tools/call") {
						ran.Add(1)
					}
					if m.ID == nil {
						m.ID = json.RawMessage("1")
					}
					hdr := append([]byte{0x88, 0x0f, 0x10, 16}, "application/json"...)
					review59jH2Frame(c, 1, 4, sid, hdr)
					review59jH2Frame(c, 0, 1, sid, []byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"content":[]}}`))
				}
			}(c)
		}
	}()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	g, err := New("http://"+ln.Addr().String()+"/mcp", DemoTokens(), &Options{Logger: discardLogger(),
		Transport: &http.Transport{Protocols: &p}})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(call("2", "get_customer_record", `{}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", viewer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || ran.Load() != 1 {
		t.Errorf("a call the HTTP/2 downstream refused unprocessed (REFUSED_STREAM): status %d, ran %d times, %s; "+
			"want it sent again on a new stream (200, ran once)", resp.StatusCode, ran.Load(), b)
	}
}
