package yamldoc

import (
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// A fast path for parsing catalog documents. yaml.v3 builds each node
// through a scanner, a token queue, an event and a Node, and allocates at
// every step: about 26 bytes per byte of catalog YAML and 18 MB/s, before
// anything is decoded. Catalogs are written in a small part of YAML: block
// mappings and sequences indented with spaces, plain and quoted one-line
// scalars, flow collections on one line, literal block scalars, comments.
// fastParse parses exactly that part, into the yaml.Node tree yaml.v3
// would build (the same kinds, tags, styles, values, lines and columns;
// comments are not kept: the loader does not read them), with its nodes
// taken from an arena that is reused once the document is decoded, and
// its values cut from the document's text where they need no unescaping.
//
// It is a fast path, not a second YAML parser: whatever it does not know
// to be in that part (tabs, CR, anchors, aliases, tags, directives, folded
// or kept block scalars, multi-line plain or quoted scalars, flow
// collections over several lines, empty values, escapes, and every syntax
// error) makes it give up on the document, which yaml.v3 then parses from
// the start, so that every error message and every unusual construct stays
// yaml.v3's. FuzzFastParse checks, for every input fastParse accepts, that
// yaml.v3 accepts it too and builds the same tree.

// fallback is panicked by the fast parser when the document leaves the
// part of YAML it parses; fastParse recovers it.
type fallback struct{}

// fastParser is the state of one fastParse.
type fastParser struct {
	s     string // the document's text
	i     int    // offset of the next byte
	line  int    // 1-based line of offset i
	ls    int    // offset of the start of that line
	ind   int    // after a line: the indentation of the next content line
	eof   bool   // after a line: no content line follows
	ascii bool   // s has no byte >= 0x80: columns are byte offsets
	// Beyond ASCII, the column (0-based, in characters) of offset colOff.
	colOff, colN int
	a            *nodeArena
	kids         []*yaml.Node // the children of the collections being parsed, innermost last
	depth        int
	b            strings.Builder
}

// maxFastDepth is the nesting the fast path parses; a deeper document is
// left to yaml.v3 (and its limit of 10,000).
const maxFastDepth = 64

// fastParse parses the document s (one span of a catalog file: an
// optional "---" line, at most one node, an optional "..." line) and
// returns its top node, or nil when the document is empty. ok is false
// when s leaves the part of YAML the fast path parses: parse it with
// yaml.v3 then. Node lines count from 1 at the first line of s.
func fastParse(s string, a *nodeArena, kids []*yaml.Node) (top *yaml.Node, kidsOut []*yaml.Node, ok bool) {
	p := fastParser{s: s, line: 1, a: a, kids: kids[:0], ascii: true}
	if !p.plainText() {
		return nil, kids, false
	}
	defer func() {
		if r := recover(); r != nil {
			if _, is := r.(fallback); !is {
				panic(r)
			}
			top, kidsOut, ok = nil, p.kids, false
		}
	}()
	return p.document(), p.kids, true
}

// plainText reports whether s holds none of what the fast path leaves to
// yaml.v3 at the level of characters: tabs and CRs (which YAML treats
// apart from spaces and LFs), other control characters, and, beyond
// ASCII, the characters YAML takes as line breaks or byte order marks or
// refuses.
func (p *fastParser) plainText() bool {
	s := p.s
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\t' || c == '\r' || c < 0x20 && c != '\n' || c == 0x7f {
			return false // control characters: yaml.v3 refuses all but these
		}
		if c >= utf8.RuneSelf {
			p.ascii = false
		}
	}
	if p.ascii {
		return true
	}
	for _, r := range s {
		switch {
		case r == utf8.RuneError, r >= 0x80 && r <= 0x9f, r == 0x2028, r == 0x2029, r == 0xfeff, r == 0xfffe, r == 0xffff:
			return false
		}
	}
	return true
}

func (p *fastParser) fail() { panic(fallback{}) }

// at returns the byte at offset i, or 0 past the end.
func (p *fastParser) at(i int) byte {
	if i < len(p.s) {
		return p.s[i]
	}
	return 0
}

// blankz reports whether offset i holds a space or a line break or is the end.
func (p *fastParser) blankz(i int) bool {
	c := p.at(i)
	return c == ' ' || c == '\n' || c == 0
}

// col is the 1-based column of p.i, in characters as yaml.v3 counts them.
// Beyond ASCII it counts on from the last node of the same line (nodes are
// made in the order of their offsets), so that a long line costs linear
// time.
func (p *fastParser) col() int {
	if p.ascii {
		return p.i - p.ls + 1
	}
	if p.colOff < p.ls {
		p.colOff, p.colN = p.ls, 0 // a new line
	}
	p.colN += utf8.RuneCountInString(p.s[p.colOff:p.i])
	p.colOff = p.i
	return p.colN + 1
}

func (p *fastParser) newNode(kind yaml.Kind, tag string, style yaml.Style) *yaml.Node {
	n := p.a.node()
	*n = yaml.Node{Kind: kind, Tag: tag, Style: style, Line: p.line, Column: p.col()}
	return n
}

// document parses the whole of s.
func (p *fastParser) document() *yaml.Node {
	p.startLine()
	if p.marker("---") {
		p.i += 3
		p.endLine()
	} else if !p.eof && p.i == p.ls && p.at(p.i) == '%' {
		p.fail() // a directive
	}
	if p.eof {
		return nil
	}
	if p.atEnd() {
		p.fail() // "..." with no node before it
	}
	top := p.block(p.ind, -1)
	if top.Kind != yaml.MappingNode && top.Kind != yaml.SequenceNode {
		p.fail()
	}
	p.finish()
	return top
}

// finish checks that nothing but an optional "..." line follows.
func (p *fastParser) finish() {
	if p.eof {
		return
	}
	if !p.atEnd() {
		p.fail()
	}
	p.i += 3
	p.endLine()
	if !p.eof {
		p.fail()
	}
}

// marker reports whether the next content is the document marker m at
// the start of a line, followed by a blank or the end.
func (p *fastParser) marker(m string) bool {
	return !p.eof && p.i == p.ls && strings.HasPrefix(p.s[p.i:], m) && p.blankz(p.i+3)
}

func (p *fastParser) atEnd() bool { return p.marker("...") }

// spaces returns the offset of the first byte at or after j that is not
// a space.
func (p *fastParser) spaces(j int) int {
	for j < len(p.s) && p.s[j] == ' ' {
		j++
	}
	return j
}

// nextLine moves to the start of the line after the one that holds offset
// j, or sets p.eof when there is none.
func (p *fastParser) nextLine(j int) {
	k := strings.IndexByte(p.s[j:], '\n')
	if k < 0 {
		p.i, p.eof = len(p.s), true
		return
	}
	p.i = j + k + 1
	p.line++
	p.ls = p.i
}

// startLine skips blank and comment lines from the start of a line and
// leaves p.i at the first byte of the next content line, p.ind its
// indentation, or sets p.eof.
func (p *fastParser) startLine() {
	for !p.eof {
		j := p.spaces(p.i)
		if j < len(p.s) && p.s[j] != '\n' && p.s[j] != '#' {
			p.i, p.ind = j, j-p.ls
			return
		}
		p.nextLine(j)
	}
}

// endLine checks that only blanks and a comment follow on the line, moves
// to the next content line (startLine).
func (p *fastParser) endLine() {
	j := p.spaces(p.i)
	if j < len(p.s) && p.s[j] != '\n' && !(p.s[j] == '#' && j > p.i) {
		p.fail()
	}
	p.nextLine(j)
	p.startLine()
}

// block parses the block node at p.i, whose column (0-based) is col; the
// enclosing collection is indented by parent (-1 at the top).
func (p *fastParser) block(col, parent int) *yaml.Node {
	p.depth++
	if p.depth > maxFastDepth {
		p.fail()
	}
	defer func() { p.depth-- }()
	c := p.at(p.i)
	switch {
	case c == '-' && p.blankz(p.i+1):
		return p.sequence(col)
	case p.isKey():
		return p.mapping(col)
	}
	return p.inline(parent)
}

// isKey reports whether a mapping key (a one-line plain or quoted scalar
// and ": " or ":" at the end of the line) starts at p.i.
func (p *fastParser) isKey() bool {
	c := p.at(p.i)
	var j int
	switch c {
	case '"', '\'':
		line := p.s[p.i+1:]
		if nl := strings.IndexByte(line, '\n'); nl >= 0 {
			line = line[:nl]
		}
		end := strings.IndexByte(line, c)
		if end < 0 {
			return false
		}
		j = p.i + 1 + end + 1
		j = p.spaces(j)
	default:
		if !p.plainStart(false) {
			return false
		}
		j, _ = p.scanPlain(false)
		j = p.spaces(j)
	}
	return p.at(j) == ':' && p.blankz(j+1)
}

// mapping parses a block mapping whose keys are at column m.
func (p *fastParser) mapping(m int) *yaml.Node {
	n := p.newNode(yaml.MappingNode, "!!map", 0)
	base := len(p.kids)
	for {
		k := p.key()
		p.kids = append(p.kids, k)
		p.kids = append(p.kids, p.value(m))
		if p.eof || p.ind < m || p.atEnd() {
			break
		}
		if p.ind > m || p.at(p.i) == '-' && p.blankz(p.i+1) {
			p.fail()
		}
		if !p.isKey() {
			p.fail()
		}
	}
	n.Content = p.a.content(p.kids[base:])
	p.kids = p.kids[:base]
	return n
}

// key parses a mapping key and the ':' after it.
func (p *fastParser) key() *yaml.Node {
	start := p.i
	var k *yaml.Node
	if c := p.at(p.i); c == '"' || c == '\'' {
		k = p.quoted()
	} else {
		k = p.plain(false)
	}
	p.i = p.spaces(p.i)
	if p.at(p.i) != ':' || p.i-start > 1000 {
		p.fail() // yaml.v3 looks for the ':' of a key within 1,024 bytes
	}
	p.i++
	return k
}

// value parses the value of a mapping entry whose key is at column m,
// from just after the ':'.
func (p *fastParser) value(m int) *yaml.Node {
	j := p.spaces(p.i)
	if c := p.at(j); c == '\n' || c == 0 || c == '#' {
		p.endLine()
		switch {
		case p.eof || p.ind < m || p.atEnd():
			p.fail() // an empty value
		case p.ind == m:
			if p.at(p.i) == '-' && p.blankz(p.i+1) {
				return p.sequence(m)
			}
			p.fail() // an empty value
		}
		return p.block(p.ind, m)
	}
	p.i = j
	if p.at(p.i) == '-' && p.blankz(p.i+1) {
		p.fail()
	}
	return p.inline(m)
}

// sequence parses a block sequence whose "-" are at column s.
func (p *fastParser) sequence(s int) *yaml.Node {
	n := p.newNode(yaml.SequenceNode, "!!seq", 0)
	base := len(p.kids)
	for {
		p.i++ // the '-'
		j := p.spaces(p.i)
		var kid *yaml.Node
		if c := p.at(j); c == '\n' || c == 0 || c == '#' {
			p.endLine()
			if p.eof || p.ind <= s || p.atEnd() {
				p.fail() // an empty entry
			}
			kid = p.block(p.ind, s)
		} else {
			p.i = j
			kid = p.block(p.i-p.ls, s)
		}
		p.kids = append(p.kids, kid)
		if p.eof || p.ind < s || p.atEnd() {
			break
		}
		if p.ind > s {
			p.fail()
		}
		if !(p.at(p.i) == '-' && p.blankz(p.i+1)) {
			break // the end of a sequence in a mapping at the same column
		}
	}
	n.Content = p.a.content(p.kids[base:])
	p.kids = p.kids[:base]
	return n
}

// inline parses a node that starts and ends on the current line (or a
// literal block scalar), and the rest of the line.
func (p *fastParser) inline(parent int) *yaml.Node {
	var n *yaml.Node
	switch p.at(p.i) {
	case '|':
		return p.literal(parent)
	case '[', '{':
		n = p.flow()
	case '"', '\'':
		n = p.quoted()
	default:
		n = p.plain(false)
		if p.at(p.i) == ':' {
			p.fail() // "a: b: c"
		}
	}
	p.endLine() // a more indented next line (a continuation) fails in the caller's loop
	return n
}

// plainStart reports whether a plain scalar can start at p.i.
func (p *fastParser) plainStart(flow bool) bool {
	switch c := p.at(p.i); c {
	case 0, ' ', '\n', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '-':
		return !p.blankz(p.i+1) && !(flow && isFlowIndicator(p.at(p.i+1)))
	}
	return true
}

func isFlowIndicator(c byte) bool {
	return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'
}

// scanPlain returns the end of the one-line plain scalar at p.i (trailing
// spaces excluded) and the offset where scanning stopped.
func (p *fastParser) scanPlain(flow bool) (end, stop int) {
	j := p.i
	end = j
	for j < len(p.s) {
		c := p.s[j]
		switch {
		case c == '\n':
			return end, j
		case c == ' ':
			j++
			if p.at(j) == '#' {
				return end, j
			}
			continue
		case c == ':' && p.blankz(j+1):
			return end, j
		case flow && (c == ',' || c == '?' || isFlowIndicator(c)):
			return end, j
		}
		j++
		end = j
	}
	return end, j
}

// plain parses a one-line plain scalar.
func (p *fastParser) plain(flow bool) *yaml.Node {
	if !p.plainStart(flow) {
		p.fail()
	}
	n := p.newNode(yaml.ScalarNode, "", 0)
	end, _ := p.scanPlain(flow)
	v := p.s[p.i:end]
	p.i = end
	n.Value = v
	n.Tag = plainTag(n)
	return n
}

// plainTag is the tag yaml.v3 resolves the plain scalar n to, without
// running its resolver where the answer is plain to see: it tries a plain
// scalar as null, bool, int, float or timestamp only when its first byte
// is one of "+-.~<", a digit or the first letter of a word it knows (see
// its resolve.go), and a number or timestamp holds no letter other than
// those of hex digits, base prefixes, exponents, "T" and "Z", and no
// punctuation but " +-.,:_" (time.Parse takes "," before fractional
// seconds too).
func plainTag(n *yaml.Node) string {
	v := n.Value
	switch c := v[0]; {
	case v == "<<":
		return "!!merge"
	case strings.IndexByte("+-.0123456789yYnNtTfFoO~<", c) < 0:
		return "!!str"
	case c >= '1' && c <= '9' && len(v) <= 18:
		digits := true
		for i := 1; i < len(v) && digits; i++ {
			digits = v[i] >= '0' && v[i] <= '9'
		}
		if digits {
			return "!!int"
		}
		fallthrough
	case c == '-' || c == '+' || c == '0':
		if len(v) > 1 && v[1] == '.' {
			break // "-.inf"
		}
		for i := 1; i < len(v); i++ {
			c := v[i]
			if 'a' <= c|0x20 && c|0x20 <= 'z' && strings.IndexByte("abcdefxotz", c|0x20) < 0 ||
				c < '0' && strings.IndexByte(" +-.,", c) < 0 || c > '9' && c < 'A' && c != ':' || c > 'z' ||
				c > 'Z' && c < 'a' && c != '_' {
				return "!!str"
			}
		}
	}
	return n.ShortTag() // yaml.v3's resolution of a plain scalar
}

// quoted parses a one-line single- or double-quoted scalar without escapes
// (other than ” in single quotes).
func (p *fastParser) quoted() *yaml.Node {
	q := p.s[p.i]
	style := yaml.DoubleQuotedStyle
	if q == '\'' {
		style = yaml.SingleQuotedStyle
	}
	n := p.newNode(yaml.ScalarNode, "!!str", style)
	j := p.i + 1
	start := j
	escaped := false
scan:
	for {
		k := strings.IndexAny(p.s[j:], "\"'\\\n")
		if k < 0 {
			p.fail()
		}
		j += k
		switch c := p.s[j]; {
		case c == '\n', c == '\\' && q == '"':
			p.fail() // a multi-line scalar, an escape
		case c == q && q == '\'' && p.at(j+1) == '\'':
			escaped = true
			j += 2
		case c != q:
			j++
		default:
			break scan
		}
	}
	if escaped {
		n.Value = strings.ReplaceAll(p.s[start:j], "''", "'")
	} else {
		n.Value = p.s[start:j]
	}
	p.i = j + 1
	return n
}

// literal parses a literal block scalar ("|" or "|-") whose enclosing
// collection is indented by parent, up to the next content line.
func (p *fastParser) literal(parent int) *yaml.Node {
	n := p.newNode(yaml.ScalarNode, "!!str", yaml.LiteralStyle)
	p.i++
	strip := false
	switch p.at(p.i) {
	case '-':
		strip = true
		p.i++
	case '+':
		p.fail() // keep: its trailing lines are left to yaml.v3
	}
	if c := p.at(p.i); c != ' ' && c != '\n' && c != 0 {
		p.fail() // an indentation indicator
	}
	// The rest of the header line.
	j := p.spaces(p.i)
	if c := p.at(j); !(c == '\n' || c == '#' && j > p.i) {
		p.fail()
	}
	p.nextLine(j)
	if p.eof {
		p.fail() // an empty scalar at the end
	}
	// The indentation of the first content line; empty lines before it
	// must not be longer.
	indent, maxEmpty := -1, 0
	for k := p.i; k < len(p.s); {
		e := p.spaces(k)
		if e < len(p.s) && p.s[e] != '\n' {
			indent = e - k
			break
		}
		maxEmpty = max(maxEmpty, e-k)
		k = e + 1
	}
	if indent <= parent || maxEmpty > indent {
		p.fail() // an empty scalar, or one yaml.v3 may refuse
	}
	b := &p.b
	b.Reset()
	pending := 0      // empty lines not yet written
	lastBreak := true // the last content line ends with a line break
	for p.i < len(p.s) {
		e := p.spaces(p.i)
		lineEnd := len(p.s)
		if nl := strings.IndexByte(p.s[e:], '\n'); nl >= 0 {
			lineEnd = e + nl
		}
		lead := e - p.i
		switch {
		case e == lineEnd && lead > indent:
			p.fail() // a line of spaces only, longer than the indentation
		case e == lineEnd:
			pending++ // an empty line
		case lead < indent:
			goto end // less indented: the scalar ends
		default:
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			for ; pending > 0; pending-- {
				b.WriteByte('\n')
			}
			b.WriteString(p.s[p.i+indent : lineEnd])
			lastBreak = lineEnd < len(p.s)
		}
		if lineEnd == len(p.s) {
			p.i = len(p.s)
			break
		}
		p.i = lineEnd + 1
		p.line++
		p.ls = p.i
	}
end:
	if !strip && lastBreak {
		b.WriteByte('\n')
	}
	n.Value = b.String()
	b.Reset()
	// p.i is at the start of a line: move to the next content line.
	p.startLine()
	return n
}
