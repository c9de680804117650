package token_test

import (
	"context"
	"testing"
)

// TestReview15IntrospectionErrorAnswer: an endpoint that answers an
// OAuth error ({"error": ...}, RFC 6749 section 5.2) with status 200
// instead of 401 or 400, as some do when they refuse the client's
// credentials or the request, has not judged the token: the lookup is a
// failed introspection (reported to ErrorHandler, not cached), not an
// "inactive" refusal that hides the misconfiguration for every token. An
// answer with "active" is a judgement whatever else it holds.
func TestReview15IntrospectionErrorAnswer(t *testing.T) {
	e := newIntroEndpoint(t)
	e.answer(tokAnn, `{"error": "invalid_client", "error_description": "`+introMarker+`"}`)
	e.answer(tokBob, `{"active": false, "error": "invalid_token"}`)
	i, log := newIntrospector(t, e, &clock{now: testNow}, nil)
	for range 2 {
		pr, _, err := i.Introspect(context.Background(), tokAnn)
		if pr != nil {
			t.Errorf("principal %+v, want none", *pr)
		}
		checkIntroFailure(t, err, "the answer is an OAuth error")
	}
	if n := e.count(tokAnn); n != 2 {
		t.Errorf("the endpoint was asked %d times, want 2 (failures are not cached)", n)
	}
	if n := len(log.all()); n != 2 {
		t.Errorf("ErrorHandler got %d errors, want 2", n)
	}
	_, _, err := i.Introspect(context.Background(), tokBob)
	checkIntroRefusal(t, err, "inactive")
}
