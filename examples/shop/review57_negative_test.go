package main

import (
	"testing"
)

// TestReview57NegativeAmountsAreMalformed: a product's price and stock
// below zero make a gateway answer INVALID_RESPONSE (productSchema's
// minimum 0), but the same facts elsewhere passed to the model as the
// gateway sent them: a cart item's unit price and the cart's total, an
// order's total, its item count and a category's product count of -199 or
// -1, and an inventory item's stock of -4 (admin_inventory_report). None
// can be negative in a shop; each is a malformed answer now.
func TestReview57NegativeAmountsAreMalformed(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	grace := connect(t, st, sessionAdmin, nil)
	for _, tc := range []struct{ name, tool, path, body string }{
		{"cart_unit_price", "get_cart", "/api/cart",
			`{"items":[{"sku":"RB-100","name":"Robo","quantity":1,"unitPrice":-199}],"total":199,"paymentPending":false}`},
		{"cart_total", "get_cart", "/api/cart",
			`{"items":[{"sku":"RB-100","name":"Robo","quantity":1,"unitPrice":199}],"total":-199,"paymentPending":false}`},
		{"order_total", "get_order_history", "/api/orders",
			`{"orders":[{"id":"o-1","status":"paid","total":-50,"placedAt":"2026-01-01","itemCount":1}]}`},
		{"order_item_count", "get_order_history", "/api/orders",
			`{"orders":[{"id":"o-1","status":"paid","total":50,"placedAt":"2026-01-01","itemCount":-1}]}`},
		{"category_count", "list_categories", "/api/categories",
			`{"categories":[{"id":"home","name":"Home","productCount":-1}]}`},
		{"inventory_stock", "admin_inventory_report", "/api/admin/inventory",
			`{"items":[{"sku":"RB-100","name":"Robo","available":-4}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st.gw.fail("GET", tc.path, 200, tc.body, 1)
			cs := ada
			if tc.tool == "admin_inventory_report" {
				cs = grace
			}
			res := call(t, cs, tc.tool, map[string]any{})
			e, _ := toMap(t, res.StructuredContent)["error"].(map[string]any)
			if !res.IsError || e["code"] != "INVALID_RESPONSE" {
				t.Errorf("%s: %s, want INVALID_RESPONSE", tc.name, mustJSON(t, res.StructuredContent))
			}
		})
	}
	// Zero is an amount like any other.
	st.gw.fail("GET", "/api/cart", 200, `{"items":[],"total":0,"paymentPending":false}`, 1)
	if got := ok(t, ada, "get_cart", map[string]any{}); got["total"] != float64(0) {
		t.Errorf("an empty cart: %v", got)
	}
}
