package yamlerrtest

import (
	"fmt"
	"strings"
)

// Bomb is a "billion laughs" ConfigMap: levels of anchors, each a list of nine
// aliases of the one before, so that nine levels expand to 9^9 nodes.
func Bomb(levels int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n  l0: &l0 [lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [", i, i)
		for j := range 9 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}
