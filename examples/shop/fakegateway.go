package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// fakeGateway is a synthetic RoboShop gateway: products, users, sessions,
// carts, a payment-pending flag and stock, all invented. It enforces what
// the real gateway does for the shop's purposes (the rs_auth session
// cookie, roles, the Origin check on state changes) and records every
// request it receives, headers included, so tests can see what left the
// shop server. Faults and holds let tests make it fail or wait. It is safe
// for concurrent use.
type fakeGateway struct {
	mu       sync.Mutex
	products map[string]*fakeProduct
	users    map[string]*fakeUser
	sessions map[string]string // session -> user id
	carts    map[string]map[string]int
	pending  map[string]bool // user id -> payment pending
	orders   map[string][]map[string]any
	requests []recordedRequest
	faults   []fault
	holds    map[string]*hold // "METHOD /path" -> hold
}

type fakeProduct struct {
	SKU, Name, Description, Category string
	Price                            float64
	Stock                            *int // nil: nobody reported stock
}

type fakeUser struct {
	ID, Email string
	Roles     []string
	Disabled  bool
}

// recordedRequest is one request as the gateway received it.
type recordedRequest struct {
	Method, Path, Query string
	Header              http.Header
	Body                string
}

// fault makes the next n requests matching method and path answer status
// with body instead of being served.
type fault struct {
	method, path string
	status       int
	body         string
	n            int
}

// hold makes requests to one method and path wait: each announces itself
// on arrived and waits for release; whether its context was cancelled
// meanwhile is sent on done when it finishes.
type hold struct {
	arrived chan struct{}
	release chan struct{}
	done    chan bool // true: the request's context was cancelled while held
}

// ServeHTTP records the request, applies faults and holds, authenticates
// the rs_auth cookie and routes.
func (g *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	g.mu.Lock()
	g.requests = append(g.requests, recordedRequest{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), string(body)})
	for i := range g.faults {
		f := &g.faults[i]
		if f.n > 0 && f.method == r.Method && f.path == r.URL.Path {
			f.n--
			g.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.status)
			_, _ = io.WriteString(w, f.body)
			return
		}
	}
	h := g.holds[r.Method+" "+r.URL.Path]
	g.mu.Unlock()
	if h != nil {
		h.arrived <- struct{}{}
		cancelled := false
		select {
		case <-h.release:
		case <-r.Context().Done():
			cancelled = true
		}
		defer func() { h.done <- cancelled }()
		if cancelled {
			return
		}
	}

	w.Header().Set("Content-Type", "application/json")
	user := g.sessionUser(r)
	if user == nil {
		writeJSON(w, http.StatusUnauthorized, errBody("Not signed in."))
		return
	}
	if r.Method != http.MethodGet && r.Header.Get("Origin") != "http://"+r.Host {
		writeJSON(w, http.StatusForbidden, errBody("Cross-site request refused."))
		return
	}
	status, v := g.route(r, user, body)
	writeJSON(w, status, v)
}

func (g *fakeGateway) sessionUser(r *http.Request) *fakeUser {
	c, err := r.Cookie("rs_auth")
	if err != nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	u := g.users[g.sessions[c.Value]]
	if u == nil || u.Disabled {
		return nil
	}
	cp := *u
	return &cp
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func errBody(msg string) map[string]any {
	return map[string]any{"error": map[string]any{"message": msg}}
}

func (g *fakeGateway) route(r *http.Request, u *fakeUser, body []byte) (int, any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	admin := slices.Contains(u.Roles, "admin") || slices.Contains(u.Roles, "super_admin")
	switch {
	case r.Method == "GET" && r.URL.Path == "/api/auth/me":
		return 200, map[string]any{"user": map[string]any{"id": u.ID, "email": u.Email, "roles": u.Roles}}
	case r.Method == "GET" && r.URL.Path == "/api/recommendations":
		return 200, g.recommend(r.URL.Query().Get("q"), r.URL.Query().Get("limit"))
	case r.Method == "GET" && r.URL.Path == "/api/products":
		out := []any{}
		for _, s := range strings.Split(r.URL.Query().Get("skus"), ",") {
			if pr := g.products[s]; pr != nil {
				out = append(out, productJSON(pr))
			}
		}
		return 200, map[string]any{"products": out}
	case r.Method == "GET" && len(p) == 3 && p[1] == "products":
		if pr := g.products[p[2]]; pr != nil {
			return 200, productJSON(pr)
		}
		return 404, errBody("Product not found.")
	case r.Method == "GET" && len(p) == 4 && p[1] == "products" && p[3] == "stock":
		pr := g.products[p[2]]
		if pr == nil {
			return 404, errBody("Product not found.")
		}
		if pr.Stock == nil {
			return 200, map[string]any{"sku": pr.SKU}
		}
		return 200, map[string]any{"sku": pr.SKU, "available": *pr.Stock}
	case r.Method == "GET" && r.URL.Path == "/api/categories":
		return 200, g.categories()
	case r.Method == "GET" && r.URL.Path == "/api/cart":
		return 200, g.cartJSON(u.ID)
	case r.Method == "POST" && r.URL.Path == "/api/cart":
		return g.setCart(u.ID, body)
	case r.Method == "GET" && r.URL.Path == "/api/orders":
		orders := g.orders[u.ID]
		if orders == nil {
			orders = []map[string]any{}
		}
		return 200, map[string]any{"orders": orders}
	case len(p) >= 2 && p[1] == "admin" && !admin:
		return 403, errBody("Admin role required.")
	case r.Method == "GET" && r.URL.Path == "/api/admin/users":
		if !slices.Contains(u.Roles, "super_admin") {
			return 403, errBody("Super admin role required.")
		}
		out := []any{}
		for _, id := range sortedKeys(g.users) {
			out = append(out, userJSON(g.users[id]))
		}
		return 200, map[string]any{"users": out}
	case r.Method == "GET" && len(p) == 4 && p[2] == "users":
		if x := g.users[p[3]]; x != nil {
			return 200, userJSON(x)
		}
		return 404, errBody("User not found.")
	case r.Method == "GET" && r.URL.Path == "/api/admin/orders":
		out := []any{}
		for _, id := range sortedKeys(g.orders) {
			for _, o := range g.orders[id] {
				o = mapsClone(o)
				o["userId"] = id
				out = append(out, o)
			}
		}
		return 200, map[string]any{"orders": out}
	case r.Method == "GET" && r.URL.Path == "/api/admin/inventory":
		out := []any{}
		for _, s := range sortedKeys(g.products) {
			pr := g.products[s]
			item := map[string]any{"sku": pr.SKU, "name": pr.Name}
			if pr.Stock != nil {
				item["available"] = *pr.Stock
			}
			out = append(out, item)
		}
		return 200, map[string]any{"items": out}
	case r.Method == "PUT" && len(p) == 5 && p[2] == "products":
		return g.adminProduct(p[3], p[4], body)
	case r.Method == "POST" && len(p) == 5 && p[2] == "users" && p[4] == "disable":
		x := g.users[p[3]]
		if x == nil {
			return 404, errBody("User not found.")
		}
		x.Disabled = true
		return 200, userJSON(x)
	}
	return 404, errBody("No such endpoint.")
}

func (g *fakeGateway) recommend(q, limit string) map[string]any {
	n, err := strconv.Atoi(limit)
	if err != nil || n < 1 {
		n = 5
	}
	type scored struct {
		p *fakeProduct
		s int
	}
	var hits []scored
	for _, s := range sortedKeys(g.products) {
		pr := g.products[s]
		text := strings.ToLower(pr.Name + " " + pr.Description + " " + pr.Category)
		score := 0
		for _, w := range strings.Fields(strings.ToLower(q)) {
			score += strings.Count(text, w)
		}
		if score > 0 {
			hits = append(hits, scored{pr, score})
		}
	}
	slices.SortStableFunc(hits, func(a, b scored) int { return b.s - a.s })
	items := []any{}
	for i, h := range hits {
		if i == n {
			break
		}
		items = append(items, productJSON(h.p))
	}
	return map[string]any{"strategy": "catalogue-keyword-ranking", "items": items}
}

func (g *fakeGateway) categories() map[string]any {
	count := map[string]int{}
	for _, p := range g.products {
		count[p.Category]++
	}
	out := []any{}
	for _, c := range sortedKeys(count) {
		out = append(out, map[string]any{"id": c, "name": strings.ToUpper(c[:1]) + c[1:], "productCount": count[c]})
	}
	return map[string]any{"categories": out}
}

func (g *fakeGateway) cartJSON(uid string) map[string]any {
	items := []any{}
	total := 0.0
	for _, s := range sortedKeys(g.carts[uid]) {
		q, pr := g.carts[uid][s], g.products[s]
		items = append(items, map[string]any{"sku": s, "name": pr.Name, "quantity": q, "unitPrice": pr.Price})
		total += float64(q) * pr.Price
	}
	return map[string]any{"items": items, "total": total, "paymentPending": g.pending[uid]}
}

func (g *fakeGateway) setCart(uid string, body []byte) (int, any) {
	var in struct {
		SKU      string `json:"sku"`
		Quantity *int   `json:"quantity"`
	}
	if json.Unmarshal(body, &in) != nil || in.Quantity == nil || *in.Quantity < 0 {
		return 400, errBody("Invalid cart update.")
	}
	pr := g.products[in.SKU]
	if pr == nil {
		return 404, errBody("Product not found.")
	}
	if g.pending[uid] {
		return 409, errBody("A payment is pending for this cart; it cannot change until the payment completes.")
	}
	if pr.Stock != nil && *in.Quantity > *pr.Stock {
		return 409, errBody(fmt.Sprintf("Only %d left in stock.", *pr.Stock))
	}
	if g.carts[uid] == nil {
		g.carts[uid] = map[string]int{}
	}
	if *in.Quantity == 0 {
		delete(g.carts[uid], in.SKU)
	} else {
		g.carts[uid][in.SKU] = *in.Quantity
	}
	return 200, g.cartJSON(uid)
}

func (g *fakeGateway) adminProduct(sku, field string, body []byte) (int, any) {
	pr := g.products[sku]
	if pr == nil {
		return 404, errBody("Product not found.")
	}
	var in struct {
		Price *float64 `json:"price"`
		Stock *int     `json:"stock"`
	}
	if json.Unmarshal(body, &in) != nil {
		return 400, errBody("Invalid body.")
	}
	switch {
	case field == "price" && in.Price != nil && *in.Price > 0:
		pr.Price = *in.Price
	case field == "stock" && in.Stock != nil && *in.Stock >= 0:
		pr.Stock = intp(*in.Stock)
	default:
		return 400, errBody("Invalid " + field + ".")
	}
	return 200, productJSON(pr)
}

func productJSON(p *fakeProduct) map[string]any {
	m := map[string]any{"sku": p.SKU, "name": p.Name, "description": p.Description, "price": p.Price,
		"currency": "EUR", "category": p.Category, "source": "catalogue"}
	if p.Stock != nil {
		m["stock"] = *p.Stock
	}
	return m
}

func userJSON(u *fakeUser) map[string]any {
	return map[string]any{"id": u.ID, "email": u.Email, "roles": u.Roles, "disabled": u.Disabled}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func mapsClone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}
