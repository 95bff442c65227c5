package exitcode

import "fmt"

func ExampleJoin() {
	fmt.Println(Join(NotRetried))
	fmt.Println(Join([]int{TempFail}))
	// Output:
	// 2, 3 and 75
	// 75
}
