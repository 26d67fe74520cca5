package yamldoc

import (
	"strconv"
	"unicode/utf8"
)

// maxQuote is the most of a user's value that a message quotes: a message
// must not grow with the input (a 4 MiB invalid constraint gave a 12 MiB
// error, its value quoted three times).
const maxQuote = 200

// Quote is s quoted as %q quotes it, at most its first maxQuote bytes (cut
// at a character boundary), followed by how long s is when it is longer:
// "v1.0.0-aaaa"... (4194304 bytes). Every message that quotes a value a
// user wrote quotes it with Quote.
func Quote(s string) string {
	head, more := cut(s)
	return strconv.Quote(head) + more
}

// Clip is Quote without the quotes, for a key in a field path
// (spec.params.KEY).
func Clip(s string) string {
	head, more := cut(s)
	return head + more
}

// cut returns the first maxQuote bytes of s, cut at a character boundary,
// and what says how long s is ("... (4194304 bytes)"), or s and "".
func cut(s string) (head, more string) {
	if len(s) <= maxQuote {
		return s, ""
	}
	n := maxQuote
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], "... (" + strconv.Itoa(len(s)) + " bytes)"
}
