package yamldoc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxDocumentBytes bounds one YAML document of a catalog file: a larger one
// is reported, not parsed, so that a hostile file cannot make Load spend
// minutes and gigabytes. Catalog documents are a few kilobytes; a
// ComponentVersion with a large inline template (a CRD bundle) stays far
// below it.
const maxDocumentBytes = 8 << 20

// Document is one parsed YAML document of a file.
type Document struct {
	File string     // the file's path
	Line int        // the line of the document's top node
	Node *yaml.Node // the document's top node
	Base int        // added to node lines: the line before the document's part of the file
	// Text is the document's text, which Lines parses again for the lines
	// of problems found after decoding; its first line is line TextBase+1.
	Text     []byte
	TextBase int
	// aliases is what the document's aliases bring in (expandAliases).
	aliases aliasExpansion
}

var yamlLine = regexp.MustCompile(`^(yaml: )?line (\d+): `)

// parserErrors are yaml.v3's parser (not scanner) errors: it reports their
// line 0-based, one less than the line it means (the start of the
// collection being parsed, or the token it stopped at).
var parserErrors = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// parseSpans parses the documents of spans, consecutive spans of a file
// (all of them, or a piece). Problems of the YAML text are added to ps:
// binary data, a document over maxDocumentBytes, a syntax error. None of
// them stops the file: checking resumes at the next document (the next
// line that starts with "---"), as if the file began there; a syntax error
// in the last document ends the file.
//
// Each document goes through the fast path (fastParse, its nodes from a;
// a nil a turns the fast path off); one the fast path leaves is parsed by
// yaml.v3, alone (a document that holds a directive with the next, which
// it is cut from).
func parseSpans(name string, data []byte, spans []span, a *nodeArena, ps *[]Problem) []Document {
	docs := make([]Document, 0, len(spans)) // at most one per span
	var kids []*yaml.Node
	good := func(s span) bool { return s.bad < 0 && s.end-s.start <= maxDocumentBytes }
	// fast parses span i on the fast path.
	fast := func(i int) bool {
		if a == nil {
			return false
		}
		s := spans[i]
		top, k, ok := fastParse(string(data[s.start:s.end]), a, kids)
		kids = k
		if ok && top != nil {
			base := s.line - 1
			docs = append(docs, Document{File: name, Line: base + top.Line, Node: top, Base: base, Text: data[s.start:s.end], TextBase: base})
		}
		return ok
	}
	for i := 0; i < len(spans); {
		s := spans[i]
		switch {
		case s.bad >= 0:
			*ps = append(*ps, Problem{File: name, Line: lineAt(data, s.bad), Message: fmt.Sprintf("not YAML (binary data at byte %d)", s.bad),
				Fix: "a catalog file is UTF-8 text; remove the file or the bytes, or give the file another extension"})
			i++
			continue
		case s.end-s.start > maxDocumentBytes:
			*ps = append(*ps, Problem{File: name, Line: firstLine(data, s), Message: fmt.Sprintf("YAML document of %d bytes is larger than the limit of %d (%d MiB)", s.end-s.start, maxDocumentBytes, maxDocumentBytes>>20),
				Fix: "split it into smaller documents; a catalog document is usually a few kilobytes"})
			i++
			continue
		case fast(i):
			i++
			continue
		}
		// yaml.v3 parses the document alone (with the next if it holds a
		// directive): parsed with the next, a syntax error in that one
		// could cost this one too (yaml.v3 reads ahead before it returns a
		// document).
		j := i + 1
		for j < len(spans) && good(spans[j]) && directive(data[spans[j-1].start:spans[j-1].end]) {
			j++
		}
		var errLine int
		var err *Problem
		docs, errLine, err = parseRun(name, data, spans[i:j], docs)
		if err == nil {
			i = j
			continue
		}
		*ps = append(*ps, *err)
		// Resume at the first document that starts at or after the error's
		// line and after this run's start.
		k := i + 1
		for k < j && spans[k].line < errLine {
			k++
		}
		if k >= j {
			i = j // the error is in the run's last document
			continue
		}
		// Drop documents of the run that parsed before the failure but
		// start at or after k: they are parsed again from k.
		for len(docs) > 0 && docs[len(docs)-1].Line >= spans[k].line {
			docs = docs[:len(docs)-1]
		}
		i = k
	}
	return docs
}

// directive reports whether text has a line that starts with "%" (a YAML
// directive, which applies to the document after it).
func directive(text []byte) bool {
	return bytes.HasPrefix(text, []byte("%")) || bytes.Contains(text, []byte("\n%"))
}

// parseRun parses the documents of spans, consecutive spans of data, and
// appends them to docs. On a syntax error it returns the documents before
// it, the error's line and the problem.
func parseRun(name string, data []byte, spans []span, docs []Document) ([]Document, int, *Problem) {
	base := spans[0].line - 1
	text := data[spans[0].start:spans[len(spans)-1].end]
	dec := yaml.NewDecoder(bytes.NewReader(text))
	k := 0          // the span of the last document
	var n yaml.Node // the document node, reused: only its content is kept
	for {
		n = yaml.Node{}
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, 0, nil
		}
		if err != nil {
			p := syntaxProblem(name, err, base, text)
			return docs, p.Line, p
		}
		if len(n.Content) == 0 || (n.Content[0].Kind == yaml.ScalarNode && n.Content[0].Tag == "!!null") {
			continue // an empty document between "---" separators
		}
		top := n.Content[0]
		line := base + top.Line
		for k+1 < len(spans) && spans[k+1].line <= line {
			k++
		}
		s := spans[k]
		docs = append(docs, Document{File: name, Line: line, Node: top, Base: base, Text: data[s.start:s.end], TextBase: s.line - 1,
			aliases: expandAliases(top, data[s.start:s.end])})
	}
}

func syntaxProblem(name string, err error, base int, text []byte) *Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[2])
		msg = err.Error()[len(m[0]):]
		for _, pe := range parserErrors {
			if msg == pe {
				line++
				break
			}
		}
	}
	fix := "fix the YAML syntax"
	if anchor, ok := strings.CutPrefix(msg, "unknown anchor '"); ok {
		// yaml.v3 gives no line: the first alias of that name is the one.
		if l := aliasLine(text, strings.TrimSuffix(anchor, "' referenced")); l > 0 {
			line = l
		}
		fix = "define the anchor (&name) before the alias (*name) in the same document: an anchor does not carry over to the documents after it"
	}
	if strings.HasPrefix(msg, "exceeded max depth of ") {
		msg = "YAML nested deeper than the limit of " + strings.TrimPrefix(msg, "exceeded max depth of ") + " levels"
		fix = "flatten the value; catalog documents nest a few levels"
	}
	return &Problem{File: name, Line: base + line, Message: "invalid YAML: " + msg, Fix: fix, Hides: true}
}

// aliasLine is the 1-based line of text of the first alias *name, or 0.
func aliasLine(text []byte, name string) int {
	alias := []byte("*" + name)
	for off := 0; ; {
		i := bytes.Index(text[off:], alias)
		if i < 0 {
			return 0
		}
		i += off
		end := i + len(alias)
		before := i == 0 || bytes.IndexByte([]byte(" \n[{,"), text[i-1]) >= 0
		after := end == len(text) || bytes.IndexByte([]byte(" \n]},"), text[end]) >= 0
		if before && after {
			return lineAt(text, i)
		}
		off = i + 1
	}
}

// lineAt is the 1-based line of data's byte at off.
func lineAt(data []byte, off int) int { return 1 + bytes.Count(data[:off], []byte{'\n'}) }

// firstLine is the line of the first character of s that is not a blank,
// a comment or a "---" (where its content starts), or s.line.
func firstLine(data []byte, s span) int {
	line := s.line
	for off := s.start; off < s.end; line++ {
		end := bytes.IndexByte(data[off:s.end], '\n')
		text := data[off:s.end]
		if end >= 0 {
			text = data[off : off+end]
		}
		t := strings.TrimSpace(string(text[:min(len(text), 64)]))
		if t != "" && t != "---" && !strings.HasPrefix(t, "#") {
			return line
		}
		if end < 0 {
			break
		}
		off += end + 1
	}
	return s.line
}
