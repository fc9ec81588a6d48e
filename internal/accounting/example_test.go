package accounting_test

import (
	"fmt"

	"github.com/pwsd/pwsd/internal/accounting"
)

// A hundred releases, each (0.5, 1e-8)-DP: basic composition spends
// epsilon 50; composed by PLD, epsilon at delta 1e-5 is about 31.
func Example() {
	g := accounting.DefaultGrid()
	one, err := accounting.Generic(g, 0.5, 1e-8)
	if err != nil {
		fmt.Println(err)
		return
	}
	hundred, err := one.SelfCompose(100)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("epsilon at delta 1e-5: %.1f (basic: 50)\n", hundred.Epsilon(1e-5))
	fmt.Printf("delta at epsilon 31.5: %.1e\n", hundred.Delta(31.5))

	// How many (0.1, 1e-9) releases fit in a budget (5, 1e-5)?
	none, _ := accounting.Identity(g)
	small, _ := accounting.Generic(g, 0.1, 1e-9)
	n, _ := none.Admits(small, 5, 1e-5, 10000)
	fmt.Println("releases admitted:", n, "(basic: 50)")
	// Output:
	// epsilon at delta 1e-5: 31.4 (basic: 50)
	// delta at epsilon 31.5: 9.1e-06
	// releases admitted: 128 (basic: 50)
}
