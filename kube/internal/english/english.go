// Package english holds the few word forms the kube module's messages need,
// so every package says "1 hop" and "3 hops" the same way.
//
// It mirrors github.com/hopdag/hopdag/internal/english function for function:
// the kube module is a module of its own, and Go forbids one module to import
// another module's internal packages, so the three functions are repeated
// here. Change both copies together.
package english

import (
	"strconv"
	"strings"
)

// Plural is word when n is 1, and its regular plural otherwise: "hop" gives
// "hops", "patch" "patches", "class" "classes". Words whose plural is not
// regular ("its"/"their", "is a"/"are") go through [Choose].
func Plural(n int, word string) string {
	if n == 1 {
		return word
	}
	for _, s := range []string{"s", "x", "z", "ch", "sh"} {
		if strings.HasSuffix(word, s) {
			return word + "es"
		}
	}
	return word + "s"
}

// Count is n followed by word in the form n needs: "1 hop", "0 hops".
func Count(n int, word string) string { return strconv.Itoa(n) + " " + Plural(n, word) }

// Choose is one when n is 1 and many otherwise.
func Choose(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
