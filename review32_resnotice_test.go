package mcpguard_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The UI resource of rnApp, a tool whose rule SetPolicy changes.
const rnUI = "ui://report/app"

// rnPolicy is the policy of the resources notice tests: echo for every
// caller, report_app (whose UI resource is rnUI) for appRoles.
func rnPolicy(t *testing.T, appRoles ...string) *policy.Policy {
	t.Helper()
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{
		{Name: "echo", Class: policy.Read},
		{Name: "report_app", Class: policy.Read, Roles: appRoles},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The resources of rnSpec: rnUI, and a plain one.
var (
	rnAppResource   = mcp.Resource{URI: rnUI, Name: "app", MIMEType: "text/html;profile=mcp-app"}
	rnPlainResource = mcp.Resource{URI: "file:///plain.txt", Name: "plain"}
)

// rnSpec is the server of the resources notice tests: echo and report_app,
// whose UI resource is rnUI, with rnUI and a plain resource.
func rnSpec() lcSpec {
	return lcSpec{tools: []string{"echo", "report_app"}, ui: true, resources: []mcp.Resource{rnAppResource, rnPlainResource}}
}

// TestReview32SetPolicyTellsResourceListings: under Install, a SetPolicy
// that hides (or shows) a tool hides (or shows) its UI resource, and the
// session whose caller's resources/list so changed is sent one
// notifications/resources/list_changed (on the default protocol on its
// listen, stamped with its subscriptionId); a session whose caller sees
// the same resources, one that never listed them, and an identical policy
// tell nothing. A sentinel session connected last (the guard sends in the
// server's order of its sessions) bounds the negative checks.
func TestReview32SetPolicyTellsResourceListings(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			pu, pa := rnPolicy(t, "user"), rnPolicy(t, "admin")
			r := newLCRig(t, v, pu, rnSpec())
			admin := r.connect(alice, lcListRes)
			silent := r.connect(bob, 0)
			user := r.connect(bob, lcListRes)
			if got := user.uris(t); !slices.Equal(got, []string{"file:///plain.txt", rnUI}) {
				t.Fatalf("bob lists %v under pu", got)
			}

			r.setPolicy(pa)
			r.waitRes(user, 1)
			if got := user.uris(t); !slices.Equal(got, []string{"file:///plain.txt"}) {
				t.Errorf("bob lists %v after being told of pa, want the plain resource only", got)
			}
			if n := r.w.resCount(admin.ss); n != 0 {
				t.Errorf("alice, whose resources did not change, was sent %d resources/list_changed", n)
			}
			if n := r.w.resCount(silent.ss); n != 0 {
				t.Errorf("a session that never listed the resources was sent %d", n)
			}

			// The same policy and an identical one tell nobody; then the
			// resource comes back for bob: told once more.
			r.setPolicy(pa)
			r.setPolicy(rnPolicy(t, "admin"))
			r.setPolicy(pu)
			r.waitRes(user, 2)
			if got := user.uris(t); !slices.Equal(got, []string{"file:///plain.txt", rnUI}) {
				t.Errorf("bob lists %v after rnUI came back", got)
			}
			if n := r.w.resCount(admin.ss); n != 0 {
				t.Errorf("alice was sent %d resources/list_changed", n)
			}
			if n := r.w.resCount(silent.ss); n != 0 {
				t.Errorf("a session that never listed the resources was sent %d", n)
			}
			r.w.mu.Lock()
			defer r.w.mu.Unlock()
			if want := map[bool]int{true: 2}[v == ""]; r.w.resSubID != want {
				t.Errorf("%d resources/list_changed carried a subscriptionId, want %d", r.w.resSubID, want)
			}
		})
	}
}

// TestReview32SetPolicyResourcesQuiet: no resources/list_changed for a
// new policy where the go-sdk sends none of its own: a server without
// resources (its listing cannot change), and one whose capabilities turn
// resources' listChanged off. A sentinel session connected last, whose
// tools change, bounds the check.
func TestReview32SetPolicyResourcesQuiet(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resources bool
		caps      *mcp.ServerCapabilities
	}{
		{"no_resources", false, nil},
		{"list_changed_off", true, &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: false},
		}},
	} {
		for _, v := range protocolVersions {
			t.Run(tc.name+"_"+versionName(v), func(t *testing.T) {
				pu, pa := rnPolicy(t, "user"), rnPolicy(t, "admin")
				spec := rnSpec()
				if !tc.resources {
					spec.resources = nil
				}
				spec.caps = tc.caps
				r := newLCRig(t, v, pu, spec)
				user := r.connect(bob, lcListRes)
				sentinel := r.connect(bob, lcListTools)
				r.setPolicy(pa)
				waitFor(t, func() bool { return sentinel.toolsHeard.Load() >= 1 })
				if n := r.w.resCount(user.ss); n != 0 {
					t.Errorf("the session was sent %d resources/list_changed", n)
				}
			})
		}
	}
}

// TestReview32SetPolicyResourcesStreamable: over Streamable HTTP, a
// stateless server with clients on the default protocol (their listen
// streams) and a stateful one on 2025-11-25: bob, whose resources change,
// is told once; alice is told nothing.
func TestReview32SetPolicyResourcesStreamable(t *testing.T) {
	for _, tc := range lcHTTPCases {
		t.Run(tc.name, func(t *testing.T) {
			r := newLCHTTPRig(t, tc.v, tc.stateless, rnPolicy(t, "user"), rnSpec())
			alice, bob := r.connectHTTPPair(lcListRes)
			r.setPolicy(rnPolicy(t, "admin"))
			waitFor(t, func() bool { return bob.resHeard.Load() == 1 })
			res, err := bob.cs.ListResources(context.Background(), nil)
			if err != nil || len(res.Resources) != 1 || res.Resources[0].URI != "file:///plain.txt" {
				t.Errorf("bob's listing after the notification: %v, %v", res, err)
			}
			if _, n := r.w.totals(); n != 1 {
				t.Errorf("the server sent %d resources/list_changed, want 1 (bob's)", n)
			}
			if n := alice.resHeard.Load(); n != 0 {
				t.Errorf("alice heard %d resources/list_changed", n)
			}
			r.w.mu.Lock()
			defer r.w.mu.Unlock()
			if want := map[bool]int{true: 1}[tc.stateless]; r.w.resSubID != want {
				t.Errorf("%d carried a subscriptionId, want %d", r.w.resSubID, want)
			}
		})
	}
}

// TestReview32SetPolicyResourcesQuickSuccession: policies set in quick
// succession while a session lists the resources end with each session
// told of its last change: its next listing is the last policy's.
func TestReview32SetPolicyResourcesQuickSuccession(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			pu, pa := rnPolicy(t, "user"), rnPolicy(t, "admin")
			r := newLCRig(t, v, pu, rnSpec())
			admin := r.connect(alice, lcListRes)
			users := []*lcSession{r.connect(bob, lcListRes), r.connect(bob, lcListRes)}
			r.churn(users[0], lcListRes, pu, pa) // a session listing meanwhile
			waitFor(t, func() bool { return users[1].resHeard.Load() >= 1 })
			// Each lists the last policy's resources: on the default
			// protocol its client caches the listing until it is told.
			for _, u := range users {
				waitFor(t, func() bool { return slices.Equal(u.uris(t), []string{"file:///plain.txt"}) })
			}
			n := r.w.resCount(users[1].ss)
			r.setPolicy(pu)
			r.waitRes(users[1], n+1)
			if n := r.w.resCount(admin.ss); n != 0 {
				t.Errorf("alice, whose resources never changed, was sent %d", n)
			}
		})
	}
}

// TestReview32PanickingResourceNoticeTellsTheRest: a sending middleware
// below the guard that panics on one session's resources/list_changed
// keeps no later session from being told.
func TestReview32PanickingResourceNoticeTellsTheRest(t *testing.T) {
	pu, pa := rnPolicy(t, "user"), rnPolicy(t, "admin")
	var victim atomic.Pointer[mcp.ServerSession]
	spec := rnSpec()
	spec.setup = lcPanicOn("notifications/resources/list_changed", &victim)
	r := newLCRig(t, "2025-11-25", pu, spec)
	first := r.connect(bob, lcListRes)
	victim.Store(first.ss)
	second := r.connect(bob, lcListRes)
	r.setPolicy(pa)
	r.waitRes(second, 1)
	r.setPolicy(pu)
	r.waitRes(second, 2)
}
