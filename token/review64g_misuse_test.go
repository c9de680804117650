package token_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// noPanic runs f and fails the test, naming what, if f panics.
func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if v := recover(); v != nil {
			t.Errorf("%s panicked: %v", what, v)
		}
	}()
	f()
}

// TestReview64gUnmadeJWT: a JWT not made by NewJWT (token.JWT{}, or a nil
// *JWT) panicked on every token (a nil clock), in Verify, Authenticate and
// the go-sdk Verifier, where an Introspector not made by NewIntrospector
// returns an error that says so. It must refuse the token with an error.
func TestReview64gUnmadeJWT(t *testing.T) {
	const tok = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1In0.c2ln"
	for _, v := range []*token.JWT{{}, nil} {
		noPanic(t, fmt.Sprintf("Verify on a %T (nil: %v)", v, v == nil), func() {
			if pr, _, err := v.Verify(tok); err == nil || pr != nil {
				t.Errorf("Verify on a JWT not made by NewJWT = %v, %v; want an error", pr, err)
			}
		})
		noPanic(t, "Authenticate", func() {
			if _, err := v.Authenticate(context.Background(), tok); err == nil {
				t.Error("Authenticate on a JWT not made by NewJWT: no error")
			}
		})
		noPanic(t, "Verifier", func() {
			if _, err := v.Verifier()(context.Background(), tok, nil); err == nil {
				t.Error("Verifier on a JWT not made by NewJWT: no error")
			}
		})
	}
}

// TestReview64gNilIntrospector: a nil *Introspector panicked in Introspect,
// Authenticate (but for an empty token), its Verifier and String/Format,
// where a zero one returns ErrIntrospectionFailed ("not made by
// NewIntrospector") and a nil *Table or *GatewaySigner prints itself.
func TestReview64gNilIntrospector(t *testing.T) {
	var i *token.Introspector
	noPanic(t, "Introspect", func() {
		if _, _, err := i.Introspect(context.Background(), "abc"); !errors.Is(err, token.ErrIntrospectionFailed) {
			t.Errorf("Introspect on a nil *Introspector: %v; want ErrIntrospectionFailed", err)
		}
	})
	noPanic(t, "Verifier", func() {
		if _, err := i.Verifier()(context.Background(), "abc", nil); err == nil {
			t.Error("Verifier on a nil *Introspector: no error")
		}
	})
	noPanic(t, "String", func() { _ = i.String() })
	noPanic(t, "String of a nil *RemoteKeySet", func() { _ = (*token.RemoteKeySet)(nil).String() })
}

// TestReview64gCheckPrincipalEmpty: CheckPrincipal says a principal it
// passes travels in identity headers and is read back as the same one, but
// it passed a principal without a subject (which FromGatewayHeaders reads
// back as no identity; policy.Principal: "never empty for an authenticated
// principal"), and panicked on a nil one. Both must be errors.
func TestReview64gCheckPrincipalEmpty(t *testing.T) {
	if err := token.CheckPrincipal(&policy.Principal{Roles: []string{"admin"}}); err == nil {
		t.Error("CheckPrincipal passes a principal without a subject")
	}
	noPanic(t, "CheckPrincipal(nil)", func() {
		if err := token.CheckPrincipal(nil); err == nil {
			t.Error("CheckPrincipal(nil) = nil")
		}
	})
}
