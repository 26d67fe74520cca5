package components

import (
	"bytes"
	"strings"
)

// tail keeps the last max bytes written to it, and the byte before them so
// that it knows whether they start a line. It is written by one goroutine
// and read after that goroutine is done.
type tail struct {
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) write(p []byte) {
	t.buf = append(t.buf, p...)
	// Trim at twice the bound, so that the copying is amortised.
	if keep := t.max + 1; len(t.buf) > 2*keep {
		t.buf = t.buf[:copy(t.buf, t.buf[len(t.buf)-keep:])]
	}
}

// bytes returns the last max bytes.
func (t *tail) bytes() []byte {
	if len(t.buf) > t.max {
		return t.buf[len(t.buf)-t.max:]
	}
	return t.buf
}

// lastLines returns the last n lines that are not blank, leaving out a first
// line that the bound cut.
func (t *tail) lastLines(n int) []string {
	b := t.bytes()
	if len(t.buf) > t.max && t.buf[len(t.buf)-t.max-1] != '\n' {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		} else {
			b = nil
		}
	}
	var lines []string
	for l := range strings.Lines(string(b)) {
		if l = strings.TrimRight(l, "\r\n"); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
