package gateway

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReview38PartialAnswerNotSentAgain pins what exchange's doc says of a
// reused connection the downstream closes: a request is sent again only
// when it closed "without a byte of answer". A GET whose answer's header
// was cut after its status line was answered (in part): it must fail, not
// go to the downstream a second time. The check exchange made,
// pc.br.Buffered() == 0, was always true once the reader met the close
// (the bytes read were consumed), so the GET was sent again; it now also
// asks whether a byte was read for this answer.
func TestReview38PartialAnswerNotSentAgain(t *testing.T) {
	s := review38Serve(t, func(n int, _ *http.Request) string {
		if n == 1 {
			return "HTTP/1.1 200 OK\r\n" + review38Close // the header cut
		}
		return review38OK
	})
	c := newUpstreamClient()
	defer c.CloseIdleConnections()
	doGet(t, c, http.MethodGet, s.url+"/first", nil)
	req, _ := http.NewRequest(http.MethodGet, s.url+"/second", nil)
	resp, err := c.RoundTrip(req)
	if err == nil {
		review38Read(t, resp)
		t.Errorf("GET /second, its answer cut after the status line: answered, want an error")
	}
	want := []string{"GET /first", "GET /second"}
	if diff := cmp.Diff(want, s.requests()); diff != "" {
		t.Errorf("GET /second, its answer cut after the status line: requests seen (-want +got):\n%s", diff)
	}
}
