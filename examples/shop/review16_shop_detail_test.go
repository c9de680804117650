package main

import (
	"testing"
)

// TestReview16ErrorDetailInvisibleRemoved: the gateway's public message of
// a 400, 404 or 409 reaches the model as the error's detail (a 409 names
// the product or the stock, text that can come from the catalogue). It was
// cleaned of control and format characters only, so the line and
// paragraph separators U+2028 and U+2029 and the supplementary variation
// selectors U+E0100-U+E01EF, which can carry hidden bytes, passed, while
// the same characters are removed from every string of a 2xx answer. The
// detail now loses every character a 2xx answer's strings lose, and its
// line breaks: it is one line.
func TestReview16ErrorDetailInvisibleRemoved(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	// "\udb40\udd00\udb40\udd01" is U+E0100 U+E0101; "\udb40\udc49" the tag letter I.
	hidden := `\u2028\u2029\udb40\udd00\udb40\udd01\udb40\udc49\u202e\u200b\u001b\u0085\n\t`
	st.gw.fail("POST", "/api/cart", 409, `{"error":{"message":"Only 3 left`+hidden+` of Robo`+hidden+` Vacuum S1."}}`, 1)
	e := toolErr(t, ada, "update_cart", map[string]any{"sku": "RB-100", "quantity": 4})
	if want := "Only 3 left of Robo Vacuum S1."; e["detail"] != want {
		t.Errorf("update_cart answered 409 with invisible characters: detail %+q, want %q", e["detail"], want)
	}
}
