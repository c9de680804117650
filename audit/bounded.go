package audit

import "context"

// acquire takes a place of sem, waiting for one or for ctx: a free place
// is taken even once ctx is done.
func acquire(ctx context.Context, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// await returns the error that comes on done, or ctx's error once ctx
// ends first (done's, if it has come by then too): the work that sends on
// done, which heeds no context, goes on without its caller.
func await(ctx context.Context, done <-chan error) error {
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		select {
		case err := <-done:
			return err
		default:
			return ctx.Err()
		}
	}
}
