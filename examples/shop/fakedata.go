package main

import "slices"

// The synthetic sessions.
const (
	sessionCustomer  = "sess-customer-ada"
	sessionCustomer2 = "sess-customer-bo"
	sessionAdmin     = "sess-admin-grace"
	sessionSuper     = "sess-super-linus"
)

func intp(n int) *int { return &n }

func newFakeGateway() *fakeGateway {
	g := &fakeGateway{
		products: map[string]*fakeProduct{
			"RB-100": {"RB-100", "Robo Vacuum S1", "A quiet robot vacuum for small flats; maps two rooms.", "home", 199.00, intp(12)},
			"RB-200": {"RB-200", "Robo Arm Kit", "A six-axis desktop robot arm kit with servo controller.", "kits", 349.50, intp(0)},
			"RB-300": {"RB-300", "Servo Pack (10)", "Ten micro servos for robot arms and walkers.", "parts", 39.99, nil},
			"RB-400": {"RB-400", "Line-Follower Bot", "A beginner robot kit that follows a line; batteries included.", "kits", 89.00, intp(3)},
			"RB-500": {"RB-500", "Lidar Module", "A 360 degree lidar module for robot vacuum and rover projects.", "parts", 129.00, intp(7)},
		},
		users: map[string]*fakeUser{
			"u-1001": {"u-1001", "ada@example.test", []string{"customer"}, false},
			"u-1002": {"u-1002", "bo@example.test", []string{"customer"}, false},
			"u-2001": {"u-2001", "grace@example.test", []string{"customer", "admin"}, false},
			"u-3001": {"u-3001", "linus@example.test", []string{"customer", "admin", "super_admin"}, false},
		},
		sessions: map[string]string{
			sessionCustomer: "u-1001", sessionCustomer2: "u-1002",
			sessionAdmin: "u-2001", sessionSuper: "u-3001",
		},
		carts:   map[string]map[string]int{"u-1001": {"RB-400": 1}},
		pending: map[string]bool{},
		orders: map[string][]map[string]any{
			"u-1001": {{"id": "o-5001", "status": "delivered", "total": 89.00, "placedAt": "2026-10-02T10:00:00Z", "itemCount": 1}},
		},
		holds: map[string]*hold{},
	}
	return g
}

// The test and demo controls.

// revoke ends a session: its next check fails.
func (g *fakeGateway) revoke(session string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.sessions, session)
}

// setPending sets the payment-pending flag of a user's cart.
func (g *fakeGateway) setPending(uid string, on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending[uid] = on
}

// fail makes the next n requests to method and path answer status and body.
func (g *fakeGateway) fail(method, path string, status int, body string, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults = append(g.faults, fault{method, path, status, body, n})
}

// hold makes requests to method and path wait; see [hold].
func (g *fakeGateway) hold(method, path string) *hold {
	h := &hold{arrived: make(chan struct{}, 64), release: make(chan struct{}), done: make(chan bool, 64)}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.holds[method+" "+path] = h
	return h
}

// unhold stops holding requests to method and path.
func (g *fakeGateway) unhold(method, path string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.holds, method+" "+path)
}

// recorded returns the requests received so far.
func (g *fakeGateway) recorded() []recordedRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.requests)
}

// count returns how many requests to method and path were received.
func (g *fakeGateway) count(method, path string) int {
	n := 0
	for _, r := range g.recorded() {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

// quantity returns the quantity of sku in a user's cart.
func (g *fakeGateway) quantity(uid, sku string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.carts[uid][sku]
}

// price returns the price of sku.
func (g *fakeGateway) price(sku string) float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.products[sku].Price
}
