package runner

import (
	"fmt"
	"unicode/utf8"

	"github.com/hopdag/hopdag/record"
)

// recorded is msg as a Status records it: msg itself when it fits in
// MaxRecorded bytes, else its first three quarters and last quarter of
// that, around a note of how much was cut (at rune boundaries).
func recorded(msg string) string {
	if len(msg) <= record.MaxRecorded {
		return msg
	}
	const note = "\n[... %d bytes cut ...]\n"
	room := record.MaxRecorded - len(note) - 12
	head, tail := room*3/4, room/4
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	t := len(msg) - tail
	for t < len(msg) && !utf8.RuneStart(msg[t]) {
		t++
	}
	return msg[:head] + fmt.Sprintf(note, t-head) + msg[t:]
}
