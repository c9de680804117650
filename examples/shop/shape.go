package main

import (
	"encoding/json"
	"unicode/utf8"
)

// The projections turn a gateway answer (decoded with json.Number, its
// strings without invisible characters: decodeAnswer) into the stable view
// a tool returns. They only pick and rename: a fact the gateway
// did not report stays null (inStock null: nobody said; inStock 0: sold
// out), and a value of the wrong type is passed on as it came, so that the
// output schema, which the guard checks before anything returns, refuses
// it as INVALID_RESPONSE. A projection never invents a value.

// maxDescription and maxName bound the catalogue's free text in results,
// in characters: product descriptions, and the names of products and
// categories. Longer text is cut; the output schemas say the bounds.
// maxLabel bounds every other string of a result (ids, SKUs, categories,
// source labels, currencies, statuses, dates, e-mail addresses, roles):
// such a string is not text to cut, and a longer one makes the answer
// INVALID_RESPONSE (the output schemas say so too). 254 characters hold
// the longest e-mail address.
const (
	maxDescription = 1000
	maxName        = 200
	maxLabel       = 254 // the longest e-mail address
)

func obj(d any) map[string]any { m, _ := d.(map[string]any); return m }

// list projects each element of an array with f; anything else is passed
// on for the schema to refuse.
func list(d any, f func(any) any) any {
	a, ok := d.([]any)
	if !ok {
		return d
	}
	out := make([]any, len(a))
	for i, v := range a {
		out[i] = f(v)
	}
	return out
}

func asSlice(d any) []any { a, _ := d.([]any); return a }

// cut returns the string v cut to n characters; anything else as it came.
func cut(v any, n int) any {
	s, ok := v.(string)
	if !ok || utf8.RuneCountInString(s) <= n {
		return v
	}
	return string([]rune(s)[:n])
}

func shapeProduct(d any) any {
	m := obj(d)
	return map[string]any{
		"sku": m["sku"], "name": cut(m["name"], maxName), "description": cut(m["description"], maxDescription),
		"price": m["price"], "currency": m["currency"], "category": m["category"],
		"inStock": m["stock"], "source": m["source"],
	}
}

// shapeSearch projects a search answer: at most the products the search
// asked for (searchLimit), in the gateway's order; a gateway that sends
// more (it ignored the limit) does not put more catalogue text before the
// model than the call asked for.
func shapeSearch(args map[string]any, d any) any {
	m := obj(d)
	items := m["items"]
	if a, ok := items.([]any); ok && len(a) > searchLimit(args) {
		items = a[:searchLimit(args)]
	}
	return map[string]any{"strategy": m["strategy"], "products": list(items, shapeProduct)}
}

func shapeCompare(args map[string]any, d any) any {
	products := list(obj(d)["products"], shapeProduct)
	// Only string SKUs count as found: a map key of another type (an
	// object, an array) would panic, and the schema refuses it anyway.
	found := map[string]bool{}
	for _, p := range asSlice(products) {
		if s, ok := obj(p)["sku"].(string); ok {
			found[s] = true
		}
	}
	missing := []any{}
	for _, s := range asSlice(args["skus"]) {
		if sku, _ := s.(string); !found[sku] {
			missing = append(missing, s)
		}
	}
	return map[string]any{"products": products, "missing": missing}
}

func shapeCategories(_ map[string]any, d any) any {
	return map[string]any{"categories": list(obj(d)["categories"], func(v any) any {
		m := obj(v)
		return map[string]any{"id": m["id"], "name": cut(m["name"], maxName), "productCount": m["productCount"]}
	})}
}

// shapeStock reports the stock with its status, by value: 0, 0.0, -0 and
// 0e0 are all zero, reported as inStock 0 and sold_out. A value that is
// not a number stays as it came, for the schema to refuse.
func shapeStock(_ map[string]any, d any) any {
	m := obj(d)
	status, stock := "unknown", m["available"]
	if n, ok := stock.(json.Number); ok {
		status = "in_stock"
		if f, err := n.Float64(); err == nil && f == 0 {
			status, stock = "sold_out", json.Number("0")
		}
	}
	return map[string]any{"sku": m["sku"], "inStock": stock, "status": status}
}

func shapeCart(d any) any {
	m := obj(d)
	return map[string]any{
		"items": list(m["items"], func(v any) any {
			i := obj(v)
			return map[string]any{"sku": i["sku"], "name": cut(i["name"], maxName), "quantity": i["quantity"], "unitPrice": i["unitPrice"]}
		}),
		"total": m["total"], "paymentPending": m["paymentPending"],
	}
}

// shapeOrders projects an order list; the admin view names each order's
// user too.
func shapeOrders(admin bool) func(map[string]any, any) any {
	return func(_ map[string]any, d any) any {
		return map[string]any{"orders": list(obj(d)["orders"], func(v any) any {
			o := obj(v)
			out := map[string]any{"id": o["id"], "status": o["status"], "total": o["total"], "placedAt": o["placedAt"], "itemCount": o["itemCount"]}
			if admin {
				out["userId"] = o["userId"]
			}
			return out
		})}
	}
}

func shapeUser(d any) any {
	m := obj(d)
	return map[string]any{"id": m["id"], "email": m["email"], "roles": m["roles"], "disabled": m["disabled"]}
}

func shapeUsers(_ map[string]any, d any) any {
	return map[string]any{"users": list(obj(d)["users"], shapeUser)}
}

func shapeInventory(_ map[string]any, d any) any {
	return map[string]any{"items": list(obj(d)["items"], func(v any) any {
		m := obj(v)
		return map[string]any{"sku": m["sku"], "name": cut(m["name"], maxName), "inStock": m["available"]}
	})}
}

// Output schemas. Every field is required, so a missing fact shows as
// null, never as absent; nullable ones say so in their type.

func object(props map[string]any) map[string]any {
	req := sortedKeys(props)
	return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
}

// nullable is the schema of a value of type t or null; a string one is
// bounded as typ bounds it.
func nullable(t string) map[string]any {
	s := typ(t)
	s["type"] = []any{t, "null"}
	return s
}

// nameSchema is a catalogue name: a string of at most maxName characters,
// or null where nullable.
func nameSchema(null bool) map[string]any {
	s := typ("string")
	if null {
		s = nullable("string")
	}
	s["maxLength"] = maxName
	return s
}

func arrayOf(items any) map[string]any { return map[string]any{"type": "array", "items": items} }

// arrayMax is arrayOf with at most n items.
func arrayMax(items any, n int) map[string]any {
	s := arrayOf(items)
	s["maxItems"] = n
	return s
}

// typ is the schema of a value of type t. A string is at most maxLabel
// characters (ids, labels, e-mail, dates): longer is a malformed answer,
// INVALID_RESPONSE. Names and descriptions, which are cut instead, set
// their own bound.
func typ(t string) map[string]any {
	if t == "string" {
		return map[string]any{"type": t, "maxLength": maxLabel}
	}
	return map[string]any{"type": t}
}

// amount is the schema of a nullable number of type t ("number" for
// prices and totals, "integer" for stock and counts) that cannot be
// negative: less than zero is a malformed answer.
func amount(t string) map[string]any {
	s := nullable(t)
	s["minimum"] = 0
	return s
}

func productSchema() map[string]any {
	desc := nullable("string")
	desc["maxLength"] = maxDescription
	return object(map[string]any{
		"sku": typ("string"), "name": nameSchema(false), "description": desc, "price": amount("number"),
		"currency": nullable("string"), "category": nullable("string"), "inStock": amount("integer"), "source": nullable("string"),
	})
}

// maxCompare is the most SKUs compare_products takes, and so the most
// products (and missing SKUs) its answer may hold: more is a malformed
// answer, INVALID_RESPONSE.
const maxCompare = 4

func searchOutput() map[string]any {
	return object(map[string]any{"strategy": nullable("string"), "products": arrayMax(productSchema(), maxSearchLimit)})
}

func compareOutput() map[string]any {
	return object(map[string]any{"products": arrayMax(productSchema(), maxCompare), "missing": arrayMax(typ("string"), maxCompare)})
}

func categoriesOutput() map[string]any {
	return object(map[string]any{"categories": arrayOf(object(map[string]any{
		"id": typ("string"), "name": nameSchema(true), "productCount": amount("integer"),
	}))})
}

func stockOutput() map[string]any {
	return object(map[string]any{"sku": typ("string"), "inStock": amount("integer"),
		"status": map[string]any{"enum": []any{"in_stock", "sold_out", "unknown"}}})
}

func cartOutput() map[string]any {
	return object(map[string]any{
		"items": arrayOf(object(map[string]any{
			"sku": typ("string"), "name": nameSchema(true), "quantity": map[string]any{"type": "integer", "minimum": 0},
			"unitPrice": amount("number"),
		})),
		"total": amount("number"), "paymentPending": nullable("boolean"),
	})
}

func ordersOutput(admin bool) map[string]any {
	props := map[string]any{"id": typ("string"), "status": nullable("string"), "total": amount("number"),
		"placedAt": nullable("string"), "itemCount": amount("integer")}
	if admin {
		props["userId"] = nullable("string")
	}
	return object(map[string]any{"orders": arrayOf(object(props))})
}

func userSchema() map[string]any {
	return object(map[string]any{"id": typ("string"), "email": nullable("string"),
		"roles": arrayOf(typ("string")), "disabled": nullable("boolean")})
}

func usersOutput() map[string]any { return object(map[string]any{"users": arrayOf(userSchema())}) }

func inventoryOutput() map[string]any {
	return object(map[string]any{"items": arrayOf(object(map[string]any{
		"sku": typ("string"), "name": nameSchema(true), "inStock": amount("integer"),
	}))})
}
