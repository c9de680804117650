package main

import (
	"io"
	"strings"
	"testing"
)

// TestReview55bExplicitOriginSentAsBrowsersSendIt: --origin is "the Origin
// sent with state changes for the gateway's CSRF check", and the gateway
// compares it with its own origin as a browser serialises it (RFC 6454:
// scheme and host in lower case, no default port, no IPv6 zone). The
// default was fixed to be sent so (TestReview23DefaultOriginIsTheGatewaysOwn),
// and --allowed-origins refuses the spellings that can match nothing, but
// an --origin given explicitly was accepted by checkOrigin and sent exactly
// as typed: --origin https://Shop.Example:443 sent "https://Shop.Example:443",
// and every update_cart and admin write was refused by the gateway's CSRF
// check (reported to the model as "forbidden: the RoboShop account may not
// do this"). The value is now sent in a browser's serialisation; end to
// end, an --origin of the synthetic gateway's own origin with the scheme in
// capitals lets update_cart through.
func TestReview55bExplicitOriginSentAsBrowsersSendIt(t *testing.T) {
	for _, tc := range []struct{ origin, want string }{
		{"https://shop.example", "https://shop.example"},
		{"https://Shop.Example:443", "https://shop.example"},
		{"HTTP://shop.example:80", "http://shop.example"},
		{"http://Shop.Example:8080", "http://shop.example:8080"},
		{"https://shop.example:80", "https://shop.example:80"},
		{"http://[::1]:80", "http://[::1]"},
		{"http://[fe80::1%25eth0]:8080", "http://[fe80::1]:8080"},
		{"http://shop.example:", "http://shop.example"},
	} {
		c, err := newGatewayClient("http://127.0.0.1:4110", tc.origin)
		if err != nil {
			t.Fatalf("--origin %s: %v", tc.origin, err)
		}
		if c.origin != tc.want {
			t.Errorf("--origin %s: sends Origin %q, want %q", tc.origin, c.origin, tc.want)
		}
	}

	// End to end: the synthetic gateway's CSRF check compares the Origin
	// with its own, http://127.0.0.1:PORT.
	st := newStack(t, nil, nil)
	cfg := defaultConfig()
	cfg.gateway, cfg.stdio, cfg.launch = st.gwURL, true, sessionCustomer
	cfg.origin = "HTTP://" + strings.TrimPrefix(st.gwURL, "http://")
	s, err := newShop(cfg, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := connectInMemory(t, s, nil)
	res := call(t, cs, "update_cart", map[string]any{"sku": "RB-100", "quantity": 2})
	if res.IsError {
		t.Errorf("update_cart with --origin %s: %s, want the cart (the gateway's CSRF check refused the Origin sent)", cfg.origin, mustJSON(t, res.StructuredContent))
	}
	if q := st.gw.quantity("u-1001", "RB-100"); q != 2 {
		t.Errorf("RB-100 in the cart: %d, want 2", q)
	}
}
