package eventlimit_test

import (
	"fmt"
	"strings"

	"github.com/hopdag/hopdag/kube/internal/eventlimit"
)

// A note longer than the events API accepts is cut, saying how much was
// left out.
func ExampleNote() {
	note := eventlimit.Note("components failed: " + strings.Repeat("x", 2000))
	fmt.Println(len(note) <= eventlimit.NoteBytes)
	fmt.Println(note[len(note)-23:])
	// Output:
	// true
	// ... and 1018 more bytes
}
