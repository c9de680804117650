package main

import (
	"encoding/json"
	"math/big"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A toolSpec is one tool as data, kept apart from the protocol code: its
// name, title, a description that says what it will not do, its input and
// output schemas, how to build the gateway request from the validated
// arguments, how to shape the gateway's answer, who may see it, and its
// write, destructive and idempotent annotations. Roles only filter
// discovery and fail fast: the gateway is the authority.
type toolSpec struct {
	name, title, description string
	input                    map[string]any // properties
	required                 []string
	output                   map[string]any
	request                  func(args map[string]any) gatewayRequest
	shape                    func(args map[string]any, doc any) any
	roles                    []string
	write, destructive       bool
	idempotent               bool
	confirm                  bool // a signed one-time human confirmation first (admin writes)
}

// gatewayRequest is what a tool asks of the gateway.
type gatewayRequest struct {
	method, path string
	query        url.Values
	body         any // nil: no body
}

// customerRoles is the role set of the customer tools: any signed-in
// shopper. Admin tools match the policy's "admin_*" role rule instead.
func customerRoles() []string { return []string{"customer"} }

// Argument schemas. Strings are bounded and refuse control characters
// (the guard refuses C0/C1 controls; the free-text pattern also refuses
// tab and newlines, which it would allow, the Unicode line and paragraph
// separators U+2028/U+2029, and every format character (Cf: bidi
// overrides such as U+202E, zero-width characters, U+FEFF)).
func skuSchema() map[string]any {
	return map[string]any{"type": "string", "pattern": "^[A-Z0-9][A-Z0-9-]{2,31}$", "maxLength": 32,
		"description": "Product SKU, e.g. RB-100."}
}

func userIDSchema() map[string]any {
	return map[string]any{"type": "string", "pattern": "^u-[0-9]{1,12}$", "maxLength": 14, "description": "User id, e.g. u-1001."}
}

func textSchema(min, max int, desc string) map[string]any {
	return map[string]any{"type": "string", "minLength": min, "maxLength": max, "pattern": textPattern, "description": desc}
}

func intSchema(min, max int, desc string) map[string]any {
	return map[string]any{"type": "integer", "minimum": min, "maximum": max, "description": desc}
}

// textPattern is the pattern of free-text arguments: no tab, CR, LF, line
// or paragraph separator, nor format character.
const textPattern = `^[^\t\n\r\p{Zl}\p{Zp}\p{Cf}]*$`

// integer returns a validated integer argument as an int64, whatever its
// JSON spelling: the guard's validator accepts 10, 10.0 and 1e1 alike as
// the integer 10 (a JSON Schema integer is a value), and the gateway gets
// the plain integer. ok is false when the argument is absent.
func integer(args map[string]any, k string) (n int64, ok bool) {
	v, ok := args[k].(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := v.Int64(); err == nil {
		return i, true
	}
	f, err := v.Float64()
	if err != nil {
		return 0, false
	}
	return int64(f), true // integral and bounded by the schema
}

// intArg returns the required integer argument k as an int64 (see integer).
func intArg(args map[string]any, k string) any {
	if n, ok := integer(args, k); ok {
		return n
	}
	return args[k]
}

// price returns a validated price argument as a plain decimal with its two
// decimals in cents ("99.90"), whatever its JSON spelling: the validator
// accepts 9.99e1 and 99.9 alike as 99.90 (a JSON Schema number is a value;
// multipleOf 0.01 keeps it in whole cents). The confirmation prompt shows
// it so and the gateway gets it so, never the model's spelling, which a
// person could misread ("9.99e1 EUR"). ok is false when it is absent.
func price(args map[string]any, k string) (p json.Number, ok bool) {
	v, ok := args[k].(json.Number)
	if !ok {
		return "", false
	}
	r, ok := new(big.Rat).SetString(string(v))
	if !ok {
		return "", false
	}
	return json.Number(r.FloatString(2)), true
}

// priceArg returns the required price argument k as a plain decimal (see
// price).
func priceArg(args map[string]any, k string) any {
	if p, ok := price(args, k); ok {
		return p
	}
	return args[k]
}

// Bounds of search_products: the limit when the model gives none, and the
// largest it may give.
const (
	defaultSearchLimit = 5
	maxSearchLimit     = 20
)

// searchLimit returns the number of products a search asks for: its limit
// argument, or defaultSearchLimit. The gateway is asked for that many, and
// more in its answer are cut (shapeSearch).
func searchLimit(args map[string]any) int {
	if n, ok := integer(args, "limit"); ok {
		return int(n)
	}
	return defaultSearchLimit
}

// str returns a validated string argument.
func str(args map[string]any, k string) string { s, _ := args[k].(string); return s }

func get(path string) func(map[string]any) gatewayRequest {
	return func(map[string]any) gatewayRequest { return gatewayRequest{method: "GET", path: path} }
}

func getSKU(suffix string) func(map[string]any) gatewayRequest {
	return func(a map[string]any) gatewayRequest {
		return gatewayRequest{method: "GET", path: "/api/products/" + url.PathEscape(str(a, "sku")) + suffix}
	}
}

// toolSpecs returns the fifteen tools: eight for customers, seven for
// admins. The three admin writes are included only when adminWrites.
func toolSpecs(adminWrites bool) []*toolSpec {
	specs := []*toolSpec{
		{
			name: "search_products", title: "Search products",
			description: "Search the RoboShop catalogue by keywords and return matching products with price and stock. " +
				"Results come from the catalogue's keyword ranking (reported as strategy), not from the shopping assistant's retrieval. " +
				"Read-only: does not change the cart or place orders.",
			input: map[string]any{
				"query": textSchema(1, 200, "Keywords, e.g. \"robot vacuum\"."),
				"limit": intSchema(1, maxSearchLimit, "Most products to return; default 5."),
			},
			required: []string{"query"},
			output:   searchOutput(),
			request: func(a map[string]any) gatewayRequest {
				q := url.Values{"q": {str(a, "query")}, "limit": {strconv.Itoa(searchLimit(a))}}
				return gatewayRequest{method: "GET", path: "/api/recommendations", query: q}
			},
			shape: shapeSearch, roles: customerRoles(),
		},
		{
			name: "get_product", title: "Get product",
			description: "Get one product by SKU: name, description, price, category and stock (null when not reported). Read-only.",
			input:       map[string]any{"sku": skuSchema()}, required: []string{"sku"},
			output: productSchema(), request: getSKU(""),
			shape: func(_ map[string]any, d any) any { return shapeProduct(d) }, roles: customerRoles(),
		},
		{
			name: "compare_products", title: "Compare products",
			description: "Compare two to four products side by side by SKU. Unknown SKUs are listed as missing. Read-only; does not rank or recommend.",
			input: map[string]any{"skus": map[string]any{"type": "array", "items": skuSchema(), "minItems": 2, "maxItems": maxCompare, "uniqueItems": true,
				"description": "Two to four SKUs."}},
			required: []string{"skus"}, output: compareOutput(),
			request: func(a map[string]any) gatewayRequest {
				var skus []string
				for _, s := range asSlice(a["skus"]) {
					skus = append(skus, s.(string))
				}
				return gatewayRequest{method: "GET", path: "/api/products", query: url.Values{"skus": {strings.Join(skus, ",")}}}
			},
			shape: shapeCompare, roles: customerRoles(),
		},
		{
			name: "list_categories", title: "List categories",
			description: "List the catalogue's product categories with product counts. Read-only.",
			input:       map[string]any{}, output: categoriesOutput(),
			request: get("/api/categories"), shape: shapeCategories, roles: customerRoles(),
		},
		{
			name: "check_stock", title: "Check stock",
			description: "Check how many units of one SKU are available. inStock 0 means sold out; null means the stock was not reported. " +
				"Does not reserve stock. Read-only.",
			input: map[string]any{"sku": skuSchema()}, required: []string{"sku"},
			output: stockOutput(), request: getSKU("/stock"), shape: shapeStock, roles: customerRoles(),
		},
		{
			name: "get_cart", title: "Get cart",
			description: "Show the signed-in shopper's own cart: items, quantities, total and whether a payment is pending. Read-only.",
			input:       map[string]any{}, output: cartOutput(),
			request: get("/api/cart"), shape: func(_ map[string]any, d any) any { return shapeCart(d) }, roles: customerRoles(),
		},
		{
			name: "update_cart", title: "Set cart quantity",
			description: "Set the quantity of one SKU in the signed-in shopper's own cart; 0 removes it. Repeating the same call " +
				"has no further effect. Does not reserve stock, take payment or place an order. Fails with a conflict " +
				"while a payment is pending or when stock is insufficient.",
			input:    map[string]any{"sku": skuSchema(), "quantity": intSchema(0, 20, "Absolute quantity, 0 to 20; 0 removes the item.")},
			required: []string{"sku", "quantity"}, output: cartOutput(),
			request: func(a map[string]any) gatewayRequest {
				return gatewayRequest{method: "POST", path: "/api/cart", body: map[string]any{"sku": a["sku"], "quantity": intArg(a, "quantity")}}
			},
			shape: func(_ map[string]any, d any) any { return shapeCart(d) },
			roles: customerRoles(), write: true, destructive: true, idempotent: true,
		},
		{
			name: "get_order_history", title: "Order history",
			description: "List the signed-in shopper's own past orders with status and total. Read-only; cannot cancel, return or reorder.",
			input:       map[string]any{}, output: ordersOutput(false),
			request: get("/api/orders"), shape: shapeOrders(false), roles: customerRoles(),
		},
		{
			name: "admin_list_users", title: "List users",
			description: "Super admin only. List all accounts with e-mail, roles and whether they are disabled. " +
				"Returns personal data (e-mail addresses). Read-only: does not change accounts.",
			input: map[string]any{}, output: usersOutput(),
			request: get("/api/admin/users"), shape: shapeUsers, roles: []string{"super_admin"},
		},
		{
			name: "admin_get_user", title: "Get user",
			description: "Admin only. Get one account by user id. Read-only.",
			input:       map[string]any{"userId": userIDSchema()}, required: []string{"userId"},
			output: userSchema(),
			request: func(a map[string]any) gatewayRequest {
				return gatewayRequest{method: "GET", path: "/api/admin/users/" + url.PathEscape(str(a, "userId"))}
			},
			shape: func(_ map[string]any, d any) any { return shapeUser(d) },
		},
		{
			name: "admin_list_orders", title: "List orders",
			description: "Admin only. List recent orders of all shoppers. Read-only: cannot refund, cancel or change orders.",
			input:       map[string]any{}, output: ordersOutput(true),
			request: get("/api/admin/orders"), shape: shapeOrders(true),
		},
		{
			name: "admin_inventory_report", title: "Inventory report",
			description: "Admin only. Stock of every SKU; null where stock was not reported. Read-only: does not change stock.",
			input:       map[string]any{}, output: inventoryOutput(),
			request: get("/api/admin/inventory"), shape: shapeInventory,
		},
	}
	if !adminWrites {
		return specs
	}
	return append(specs,
		&toolSpec{
			name: "admin_set_price", title: "Set price",
			description: "Admin only. Set the price of one SKU. Needs the user's confirmation of these exact arguments. " +
				"Does not change carts already holding the product or orders already placed.",
			input: map[string]any{"sku": skuSchema(), "price": map[string]any{"type": "number", "exclusiveMinimum": 0, "maximum": 100000,
				"multipleOf": 0.01, "description": "New price in euros, in whole cents."}},
			required: []string{"sku", "price"}, output: productSchema(),
			request: func(a map[string]any) gatewayRequest {
				return gatewayRequest{method: "PUT", path: "/api/admin/products/" + url.PathEscape(str(a, "sku")) + "/price", body: map[string]any{"price": priceArg(a, "price")}}
			},
			shape: func(_ map[string]any, d any) any { return shapeProduct(d) },
			write: true, destructive: true, idempotent: true, confirm: true,
		},
		&toolSpec{
			name: "admin_set_stock", title: "Set stock",
			description: "Admin only. Set the available stock of one SKU (absolute). Needs the user's confirmation of these exact arguments. " +
				"Does not order from suppliers or change carts.",
			input:    map[string]any{"sku": skuSchema(), "stock": intSchema(0, 100000, "Units available, absolute.")},
			required: []string{"sku", "stock"}, output: productSchema(),
			request: func(a map[string]any) gatewayRequest {
				return gatewayRequest{method: "PUT", path: "/api/admin/products/" + url.PathEscape(str(a, "sku")) + "/stock", body: map[string]any{"stock": intArg(a, "stock")}}
			},
			shape: func(_ map[string]any, d any) any { return shapeProduct(d) },
			write: true, destructive: true, idempotent: true, confirm: true,
		},
		&toolSpec{
			name: "admin_disable_user", title: "Disable user",
			description: "Admin only. Disable one account so its sessions stop working. Needs the user's confirmation of these exact arguments. " +
				"Does not delete the account, its orders or its data; cannot re-enable.",
			input:    map[string]any{"userId": userIDSchema(), "reason": textSchema(3, 200, "Why the account is disabled.")},
			required: []string{"userId", "reason"}, output: userSchema(),
			request: func(a map[string]any) gatewayRequest {
				return gatewayRequest{method: "POST", path: "/api/admin/users/" + url.PathEscape(str(a, "userId")) + "/disable", body: map[string]any{"reason": a["reason"]}}
			},
			shape: func(_ map[string]any, d any) any { return shapeUser(d) },
			write: true, destructive: true, idempotent: true, confirm: true,
		},
	)
}

// mcpTool returns the protocol definition of s.
func (s *toolSpec) mcpTool() *mcp.Tool {
	in := map[string]any{"type": "object", "properties": s.input, "additionalProperties": false}
	if len(s.required) > 0 {
		in["required"] = s.required
	}
	ann := &mcp.ToolAnnotations{Title: s.title, ReadOnlyHint: !s.write, OpenWorldHint: ptr(false)}
	if s.write {
		ann.DestructiveHint, ann.IdempotentHint = ptr(s.destructive), s.idempotent
	}
	return &mcp.Tool{Name: s.name, Title: s.title, Description: s.description, InputSchema: in, OutputSchema: s.output, Annotations: ann}
}

// rule returns the policy rule of s.
func (s *toolSpec) rule() policy.ToolRule {
	c := policy.Read
	if s.write {
		c = policy.Write
	}
	return policy.ToolRule{Name: s.name, Class: c, Roles: s.roles, Confirm: s.confirm}
}

func ptr[T any](v T) *T { return &v }
