package yamldoc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// checkFast parses each document of data with fastParse and, where it
// accepts one, with yaml.v3 too: yaml.v3 must accept it and build the same
// tree. It returns how many documents the fast path took.
func checkFast(t testing.TB, data []byte) (fast, total int) {
	t.Helper()
	a := &nodeArena{}
	for _, sp := range splitDocuments(data) {
		if sp.bad >= 0 {
			continue
		}
		text := data[sp.start:sp.end]
		total++
		top, _, ok := fastParse(string(text), a, nil)
		if !ok {
			continue
		}
		fast++
		want, err := v3Document(text)
		if err != nil {
			t.Fatalf("fastParse accepts what yaml.v3 refuses (%v):\n%s", err, text)
		}
		if diff := nodeDiff("", top, want); diff != "" {
			t.Fatalf("fastParse and yaml.v3 differ at %s:\n%s", diff, text)
		}
	}
	a.reset()
	return fast, total
}

// v3Document is the top node yaml.v3 parses text into (nil for an empty
// document), or an error if text is not exactly one document.
func v3Document(text []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var doc yaml.Node
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("a second document (%v)", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null" && doc.Content[0].Value == "" {
		return nil, nil
	}
	return doc.Content[0], nil
}

// nodeDiff compares what the loader reads of two trees (comments aside)
// and describes the first difference, or returns "".
func nodeDiff(path string, got, want *yaml.Node) string {
	if got == nil || want == nil {
		if got != want {
			return fmt.Sprintf("%s: got %v, want %v", path, got, want)
		}
		return ""
	}
	type view struct {
		Kind         yaml.Kind
		Style        yaml.Style
		Tag, Value   string
		Anchor       string
		Line, Column int
		Kids         int
	}
	g := view{got.Kind, got.Style, got.Tag, got.Value, got.Anchor, got.Line, got.Column, len(got.Content)}
	w := view{want.Kind, want.Style, want.Tag, want.Value, want.Anchor, want.Line, want.Column, len(want.Content)}
	if g != w {
		return fmt.Sprintf("%s: got %+v, want %+v", path, g, w)
	}
	for i := range got.Content {
		if d := nodeDiff(fmt.Sprintf("%s/%d", path, i), got.Content[i], want.Content[i]); d != "" {
			return d
		}
	}
	return ""
}

var fastCases = []struct {
	name string
	in   string
	fast bool // whether the fast path takes it
}{
	{"mapping", "a: b\nc: d\n", true},
	{"marker and comments", "--- # first\n# lead\na: b # trailing\n\n  # indented comment\nc: 'd'\n...\n", true},
	{"nested", "a:\n  b:\n    c: [x, 'y', \"z\"]\n  d: {e: f, \"g\": h}\n", true},
	{"sequences", "a:\n- x\n- y\nb:\n  - z\n  - - p\n    - q\n  - k: v\n    l: w\n", true},
	{"scalars resolved", "a: 1\nb: 1.5\nc: true\nd: ~\ne: null\nf: 0x1f\ng: 2026-12-01\nh: v1.2\ni: --to\nj: -1\nk: .inf\nl: yes\nm: 10m\n", true},
	{"numbers and not", "a: -.inf\nb: +.INF\nc: 0b101\nd: -0x1f\ne: 1_000\nf: 1e3\ng: 2026-12-01T10:00:00Z\nh: 0o17\ni: 09\nj: 123456789012345678901\nk: -1.5e-3\nl: 10m\nm: 1.2.3\nn: 2026-12-01 10:00:00\no: 0\np: 007\nq: +1\nr: -0b11\ns: 1:20\nt: 12e\nu: 0x_1F\nv: 99999999999999999999\n", true},
	{"plain with colons and hashes", "url: http://example.com:80/a#b\nkey with spaces: a b  \nx:y: z\n", true},
	{"quotes", "a: 'it''s'\nb: \"say 'hi'\"\n'c d': e\n\"f\" : g\n", true},
	{"literal", "t: |\n  line 1\n\n  line 3\n    indented\nu: |-\n  stripped\nv: x\n", true},
	{"literal at end", "t: |\n  a\n  b\n", true},
	{"literal without final break", "t: |\n  a", true},
	{"literal with trailing empty lines", "t: |\n  a\n\n\nu: b\n", true},
	{"literal in a sequence", "- |\n  a\n- b\n", true},
	{"literal with comment line", "t: |\n  a\n  # not a comment\n# a comment\nu: b\n", true},
	{"flow nesting", "a: [[1, 2], {b: [c]}, []]\nb: {}\n", true},
	{"flow url", "a: {u: http://x, v: a:b}\n", true},
	{"json keys", "a: {\"k\":1}\n", true},
	{"merge key", "<<: {a: b}\nc: d\n", true},
	{"non-ASCII", "name: 升级\nd: {k: 版本}\n", true},
	{"top sequence", "- a\n- b\n", true},

	{"anchor", "a: &x b\nc: *x\n", false},
	{"tag", "a: !!str 1\n", false},
	{"tab", "a:\tb\n", false},
	{"CRLF", "a: b\r\n", false},
	{"directive", "%YAML 1.2\n---\na: b\n", false},
	{"folded", "a: >\n  b\n", false},
	{"keep", "a: |+\n  b\n\n", false},
	{"indentation indicator", "a: |2\n   b\n", false},
	{"multi-line plain", "a: b\n  c\n", false},
	{"multi-line flow", "a: [b,\n  c]\n", false},
	{"multi-line quoted", "a: 'b\n  c'\n", false},
	{"escape", "a: \"b\\nc\"\n", false},
	{"empty value", "a:\nb: c\n", false},
	{"empty entry", "-\n- b\n", false},
	{"trailing comma", "a: [b, ]\n", false},
	{"mapping value on the key line", "a: b: c\n", false},
	{"sequence on the key line", "a: - b\n", false},
	{"bad indentation", "a:\n    b: c\n  d: e\n", false},
	{"scalar document", "just text\n", false},
	{"unclosed flow", "a: [b, c\n", false},
	{"unclosed quote", "a: 'b\n", false},
	{"complex key", "? a\n: b\n", false},
	{"comment without a space", "a: 'b'#c\n", false},
	{"long key", strings.Repeat("k", 1100) + ": v\n", false},
}

func TestFastParse(t *testing.T) {
	for _, tc := range fastCases {
		t.Run(tc.name, func(t *testing.T) {
			fast, total := checkFast(t, []byte(tc.in))
			if got := fast == total && total > 0; got != tc.fast {
				t.Errorf("fast path took %d of %d documents, want all: %v", fast, total, tc.fast)
			}
		})
	}
}

// TestFastParseCatalogs runs the fast path over every YAML file of the
// repository's catalogs and test data: each document it takes parses the
// same with yaml.v3, and it takes nearly all of the valid catalogs.
func TestFastParseCatalogs(t *testing.T) {
	const root = "../../.." // the repository
	var fast, total int
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if ext := strings.ToLower(filepath.Ext(p)); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, n := checkFast(t, data)
		fast += f
		total += n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the fast path took %d of %d documents", fast, total)
	if total == 0 || fast*10 < total*7 {
		t.Errorf("the fast path took %d of %d documents of the repository's YAML, want most", fast, total)
	}
}

// TestFastPathChangesNothing: Load gives the same catalog, or the same
// problems, with the fast path and without it (every document parsed by

func FuzzFastParse(f *testing.F) {
	for _, tc := range fastCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		checkFast(t, data)
	})
}
