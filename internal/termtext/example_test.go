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

func ExampleSparkline() {
	fmt.Println(termtext.Sparkline([]int64{10, 20, 80, 40}, 60))
	fmt.Println(termtext.Sparkline([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9}, 3))
	// Output:
	// ▁▂█▄
	// ▁▄█
}

func ExampleBar() {
	fmt.Println(termtext.Bar(3, 10, 10), termtext.Bar(1, 1000, 10), termtext.Bar(20, 10, 10))
	// Output:
	// [###.......] [#.........] [##########]
}
