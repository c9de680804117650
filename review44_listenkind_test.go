package mcpguard_test

import "testing"

// TestReview44ListenOfOneKindAcknowledgedAfterCheck is
// TestReview32bListenAcknowledgedAfterCheck for a listen for the tools'
// changes only, and one for the resources' changes only: its session is
// told of the policy whose check passed it by, of the kind it listens for
// and of no other, whatever its view of the other kind.
func TestReview44ListenOfOneKindAcknowledgedAfterCheck(t *testing.T) {
	t.Run("tools", func(t *testing.T) { review32bListenAfterCheck(t, lcListTools, 1, 0) })
	t.Run("resources", func(t *testing.T) { review32bListenAfterCheck(t, lcListRes, 0, 1) })
}
