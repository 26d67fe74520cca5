package yamldoc

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// span is one document of a file as text: data[start:end], starting on
// line (1-based). bad >= 0 is the offset (in the file) of the first byte
// that cannot be YAML text.
type span struct {
	start, end, line int
	bad              int
}

// splitDocuments cuts data into documents at the lines YAML reserves for
// them: a line that starts with "---" begins a document, one that starts
// with "..." ends one. Such a line cannot occur inside any YAML value, so
// the cut is exact. It finds the marker lines with bytes.Index and checks
// each span for binary data a word at a time.
func splitDocuments(data []byte) []span {
	// Sized for a document per "---" line (a "..." line adds one more).
	spans := make([]span, 1, 1+bytes.Count(data, []byte("\n---")))
	spans[0] = span{start: 0, line: 1}
	cur := &spans[0]
	// next returns the offset of the next line start after from whose line
	// begins with pat, or len(data).
	next := func(from int, pat string) int {
		if i := bytes.Index(data[from:], []byte("\n"+pat)); i >= 0 {
			return from + i + 1
		}
		return len(data)
	}
	dash, dot := next(0, "---"), next(0, "...")
	if bytes.HasPrefix(data, []byte("...")) {
		dot = 0
	}
	line, lineOff := 1, 0 // the line of offset lineOff
	lineOf := func(off int) int {
		line += bytes.Count(data[lineOff:off], []byte{'\n'})
		lineOff = off
		return line
	}
	for {
		p := min(dash, dot)
		if p >= len(data) {
			break
		}
		end := len(data)
		if i := bytes.IndexByte(data[p:], '\n'); i >= 0 {
			end = p + i + 1
		}
		text := data[p:end]
		if p == dash {
			dash = next(p, "---")
			if marker(text, "---") && p > cur.start {
				cur.end = p
				spans = append(spans, span{start: p, line: lineOf(p)})
				cur = &spans[len(spans)-1]
			}
			continue
		}
		dot = next(p, "...")
		if marker(text, "...") {
			cur.end = end
			spans = append(spans, span{start: end, line: lineOf(p) + 1})
			cur = &spans[len(spans)-1]
		}
	}
	cur.end = len(data)
	for i := range spans {
		// A document over the size limit is reported as such unless binary
		// data shows within the limit: it is not read further.
		sp := &spans[i]
		sp.bad = binaryAt(data[sp.start:min(sp.end, sp.start+maxDocumentBytes)])
		if sp.bad >= 0 {
			sp.bad += sp.start
		}
	}
	return spans
}

// marker reports whether line starts with the document marker m followed
// by a blank or the end of the line.
func marker(line []byte, m string) bool {
	if !bytes.HasPrefix(line, []byte(m)) {
		return false
	}
	return len(line) == len(m) || line[len(m)] == ' ' || line[len(m)] == '\t' || line[len(m)] == '\n' || line[len(m)] == '\r'
}

// binaryAt returns the offset of the first byte of b that YAML text cannot
// hold (a control character other than tab, CR and LF, or bytes that are
// not UTF-8), or -1. Eight bytes of printable ASCII are skipped at a time.
func binaryAt(b []byte) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for i := 0; i < len(b); {
		if i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			// No byte below 0x20, none with the high bit, none equal to 0x7f.
			below := (x - 0x20*ones) & ^x & highs
			del := ((x ^ 0x7f*ones) - ones) & ^(x ^ 0x7f*ones) & highs
			if x&highs == 0 && below == 0 && del == 0 {
				i += 8
				continue
			}
		}
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// fileSpans cuts a file into its documents (splitDocuments), or returns
// the whole of a UTF-16 file.
func fileSpans(data []byte) []span {
	if bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.HasPrefix(data, []byte{0xff, 0xfe}) {
		// UTF-16 (with a byte order mark): yaml.v3 decodes it; lines are
		// the decoder's.
		return []span{{start: 0, end: len(data), line: 1, bad: -1}}
	}
	return splitDocuments(data)
}
