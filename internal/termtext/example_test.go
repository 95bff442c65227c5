package termtext_test

import (
	"fmt"

	"github.com/trendfetch/trendfetch/internal/termtext"
)

func Example() {
	title := "Live \x1b]0;pwned\x07 \u202eTSIL"
	fmt.Println(termtext.Safe(title))
	fmt.Println(termtext.Clip(title, 12))
	// Output:
	// Live \x1b]0;pwned\x07 \u202eTSIL
	// Live \x1b]0…
}
