package store

import (
	"context"
	"errors"
	"testing"
)

// TestClaimRegion (issue 39 item 4): on PostgreSQL a region's claim is held by one run at a
// time across stores (hosts), per credential and region, until released (its session closed,
// not returned to the pool still holding it); on SQLite nothing is claimed.
func TestClaimRegion(t *testing.T) {
	ctx := context.Background()
	forEachDatabase(t, func(t *testing.T, database string) {
		a, b := openAt(t, database), openAt(t, database)
		release, err := a.ClaimRegion(ctx, "default", "US")
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.ClaimRegion(ctx, "default", "US")
		if pg := a.Engine() == PostgreSQL; pg != errors.Is(err, ErrClaimed) {
			t.Fatalf("a second claim of US: %v, want ErrClaimed only on PostgreSQL", err)
		}
		other, err := b.ClaimRegion(ctx, "default", "GB")
		if err != nil {
			t.Fatalf("GB while US is claimed: %v", err)
		}
		other()
		release()
		again, err := b.ClaimRegion(ctx, "default", "US")
		if err != nil {
			t.Fatalf("US once released: %v", err)
		}
		if _, err := a.ClaimRegion(ctx, "default", "US"); a.Engine() == PostgreSQL && !errors.Is(err, ErrClaimed) {
			t.Fatalf("US claimed by the other store: %v, want ErrClaimed", err)
		}
		again()
		if release, err := a.ClaimRegion(ctx, "default", "US"); err != nil {
			t.Fatalf("US once the other store released it: %v", err)
		} else {
			release()
		}
	})
}
