// Package english holds the few word forms hopdag's messages need, so every
// package says "1 hop" and "3 hops" the same way.
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
