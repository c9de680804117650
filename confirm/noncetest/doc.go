// Package noncetest checks that a
// [github.com/mcpguard/mcpguard/confirm.NonceStore] implementation keeps the
// contract the confirmation signer relies on. A third-party store tests
// itself with one call:
//
//	func TestStore(t *testing.T) {
//		noncetest.Run(t, func(t *testing.T) confirm.NonceStore { return newStore(t) })
//	}
//
// A store that also implements
// [github.com/mcpguard/mcpguard/confirm.NonceChecker] gets its Used checked
// too: it records nothing, and agrees with Consume.
package noncetest
