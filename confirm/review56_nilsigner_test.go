package confirm_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/confirm"
)

// TestReview56NilSignerRefuses: Issue refused a nil or zero Signer with an
// error, but Check and Verify on a nil one panicked (a nil map read
// through a nil pointer).
func TestReview56NilSignerRefuses(t *testing.T) {
	c := confirm.Claims{Subject: "ann", Tool: "t", ArgsSHA256: "x"}
	good, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: bytes.Repeat([]byte{7}, confirm.MinSecretLen)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	state, err := good.Issue(time.Now(), c) // well formed: checked past its form
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*confirm.Signer{"nil": nil, "zero": {}} {
		if _, err := s.Check(time.Now(), state, c); err == nil {
			t.Errorf("%s Signer: Check accepted a state", name)
		}
		if err := s.Verify(context.Background(), time.Now(), state, c); err == nil {
			t.Errorf("%s Signer: Verify accepted a state", name)
		}
	}
}
