package exitcode

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func ExampleJoin() {
	fmt.Println(Join(NotRetried))
	fmt.Println(Join([]int{TempFail}))
	// Output:
	// 2, 3 and 75
	// 75
}

// signal is a cancellation cause that knows its code, as the CLI's signal error does.
type signal struct{}

func (signal) Error() string { return "interrupted by SIGTERM" }
func (signal) ExitCode() int { return SIGTERM }

// TestOf: nil is OK; the first code in the chain wins, wrapped or joined; a context cause that
// knows its code wins over the error; an error that knows none is Error.
func TestOf(t *testing.T) {
	notFound := New(NotFound, "not found")
	cancelled, cancel := context.WithCancelCause(context.Background())
	cancel(signal{})
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want int
	}{
		{context.Background(), nil, OK},
		{context.Background(), errors.New("disk full"), Error},
		{context.Background(), fmt.Errorf("run 5: %w", notFound), NotFound},
		{context.Background(), errors.Join(errors.New("a"), New(TempFail, "denied")), TempFail},
		{cancelled, fmt.Errorf("stopped: %w", context.Canceled), SIGTERM},
		{cancelled, New(TempFail, "denied"), SIGTERM},
		{cancelled, nil, OK},
	} {
		if got := Of(c.ctx, c.err); got != c.want {
			t.Errorf("Of(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", notFound), notFound) {
		t.Error("a sentinel of New is not found by errors.Is")
	}
}
