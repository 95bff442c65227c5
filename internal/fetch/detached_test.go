package fetch

import (
	"context"
	"testing"
)

// TestDetachedEndsItsContext: a write outlives the run's cancellation, and its context ends when
// it returns (a timer left running held each write's context for WriteTimeout: a scheduler's
// memory grew with its rate of writes).
func TestDetachedEndsItsContext(t *testing.T) {
	run, cancel := context.WithCancel(context.Background())
	cancel()
	var seen context.Context
	if err := detached(run, func(ctx context.Context) error { seen = ctx; return ctx.Err() }); err != nil {
		t.Fatalf("the write saw the run's cancellation: %v", err)
	}
	if seen.Err() == nil {
		t.Fatal("the write's context is still live after it returned")
	}
}
