package gaveup

import (
	"context"
	"errors"
	"testing"
	"time"
)

// passed is a context whose deadline has passed but whose Err is still nil.
type passed struct{ context.Context }

func (passed) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestErr(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	far, cancel2 := context.WithTimeout(context.Background(), time.Hour)
	defer cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"live", context.Background(), nil},
		{"far deadline", far, nil},
		{"cancelled", cancelled, context.Canceled},
		{"deadline passed, not yet done", passed{context.Background()}, context.DeadlineExceeded},
	} {
		if got := Err(tc.ctx); !errors.Is(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("%s: Err = %v, want %v", tc.name, got, tc.want)
		}
	}
}
