package redisevict

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// r62gStringer is a panic value whose String panics so too (fmt.Sprint
// of it panics again).
type r62gStringer struct{}

func (r62gStringer) String() string { panic(r62gStringer{}) }

// r62gClient is a Redis client (a user's wrapper) whose Info panics with
// such a value.
type r62gClient struct{}

func (r62gClient) Info(context.Context, ...string) *redis.StringCmd { panic(r62gStringer{}) }

// TestReview62gCheckPanicText: "A client that panics ... gives an error"
// (Check). check's recover formats the panic's value with fmt ("%v"),
// which panics again, in the recover, on a value whose String panics so;
// check runs on a goroutine of its own, so the process ended (the case
// 1bd179b fixed in redislimit's and redisnonce's own goroutines with
// logsafe.PanicText, and missed here, which both their New call).
func TestReview62gCheckPanicText(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- nil // the panic escaped check's recover
			}
		}()
		done <- check(context.Background(), r62gClient{}, "keys")
	}()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("check on a client whose panic's String panics: %v (nil: the panic escaped check), want the client's panic as an error", err)
	}
}
