package token

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestReview41JoinSome: up to maxListed errors are all listed; past it the
// first maxListed are, and a last line counts the rest (never "and 0
// more").
func TestReview41JoinSome(t *testing.T) {
	for _, n := range []int{1, maxListed - 1, maxListed, maxListed + 1, 3 * maxListed} {
		var errs []error
		for i := range n {
			errs = append(errs, errors.New("e"+strconv.Itoa(i)))
		}
		want := make([]string, 0, maxListed+1)
		for i := range min(n, maxListed) {
			want = append(want, "e"+strconv.Itoa(i))
		}
		if n > maxListed {
			want = append(want, "and "+strconv.Itoa(n-maxListed)+" more")
		}
		if got := joinSome(errs).Error(); got != strings.Join(want, "\n") {
			t.Errorf("%d errors: %q, want %q", n, got, strings.Join(want, "\n"))
		}
	}
}
