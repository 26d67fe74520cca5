package yamldoc

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// edgeCases are inputs at the edges of the part of YAML fastParse
// parses: each must either be left to yaml.v3 or parse exactly as yaml.v3
// parses it (checkFast).
var edgeCases = []string{
	// Found reviewing fastParse: a flow key over yaml.v3's 1,024 bytes; a comma
	// before the fraction of a timestamp; control characters.
	"{" + strings.Repeat("k", 1025) + ": v}\n", "a: {'" + strings.Repeat("k", 1025) + "': v}\n",
	"a: 2001-1-2 1:2:3,5\n", "a: 0001-1-1 1:1:1,5\n", "a: 2001-1-2T1:2:3,1Z\n", "0: 0000-1-1 0:0:0,0\n",
	"a: b\x01\n", "a: b\x7f\n", "a: b\x0c\n", "a: [é, \"é\", {é: é}]\n",
	// Plain scalars in the block context.
	"a: b:c\n", "a: b :c\n", "a:: b\n", "-: b\n", "a: -\n", "a: --\n", "a: ---\n", "a: ...\n", "a: ?x\n", "a: :x\n",
	"---x: y\n", "---: a\n", "a: b\n---: c\n", "...x: y\n", "a: b#c\n", "a: b #c\n", "a#b: c\n", "a: b,c]\n", "a: b}\n",
	"a: %x\n", "a: @x\n", "a: `x\n", "a: b@c\n", "a: b!c\n", "a: b&c\n", "a: b*c\n", "a: b|c\n", "a: b>c\n",
	"a: b'c\n", "a: b\"c\n", "a:  b  \n", "a: b   # c\n", "a: b\n\n\n", "a: b", "a: b\n# c", "a: b :#c\n", "a :b: c\n",
	"? a\n", "a: ? b\n", "a: - b\n", "a: b - c\n", "- -a\n", "- - - a\n", "-a\n- b\n", "- a\n-b\n", "- a: b: c\n",
	// Tags of plain scalars.
	"a: <<\n", "<<: x\n", "a: -.inf\n", "a: -.5\n", "a: +.5\n", "a: .5\n", "a: -0.5\n", "a: 1_0\n", "a: 0_1\n", "a: 1__0\n",
	"a: _1\n", "a: 1_\n", "a: 0x\n", "a: 0b\n", "a: 0o\n", "a: 0o8\n", "a: 0b2\n", "a: -0b10\n", "a: -0o17\n", "a: +0x1f\n",
	"a: 0777\n", "a: 0999\n", "a: 08\n", "a: 1e5\n", "a: 1E5\n", "a: 1e+5\n", "a: 1.\n", "a: 1.e5\n", "a: -1.\n", "a: +1\n", "a: +\n",
	"a: 1234567890123456789\n", "a: 12345678901234567890\n", "a: 18446744073709551615\n", "a: 18446744073709551616\n",
	"a: -9223372036854775808\n", "a: -9223372036854775809\n", "a: 123456789012345678\n", "a: 999999999999999999\n",
	"a: 0x7fffffffffffffff\n", "a: 0xffffffffffffffff\n", "a: 0b" + strings.Repeat("1", 64) + "\n", "a: -0b" + strings.Repeat("1", 64) + "\n",
	"a: 1:20\n", "a: 1:20:30\n", "a: 2001-01-01\n", "a: 2001-1-1\n", "a: 2001-01-01T00:00:00\n", "a: 2001-01-01 00:00:00 +07:00\n",
	"a: 2001-01-01T00:00:00+07:00\n", "a: 2001-01-01T00:00:00Z\n", "a: 2001-01-01t00:00:00z\n", "a: 20010-01-01\n", "a: 2001-13-01\n",
	"a: 2001-02-30\n", "a: 2001-01-01T00:00:00.5\n", "a: 2001-01-01 0:0:0\n", "a: 2001-01-01  00:00:00\n", "a: 2001-1-1T1:1:1.1-07:00\n",
	"a: 2001-12-14T21:59:43,10Z\n", "a: 2001-12-14 21:59:43,5\n", // a comma for the fraction, longer than 18 bytes
	"a: 1_000.5\n", "a: 1_0e1_0\n", "a: 0x1p3\n", "a: 0x1.8p1\n", "a: 1e\n", "a: 0.1_1\n", "a: Inf\n", "a: -Inf\n", "a: +inf\n",
	"a: nan\n", "a: .NaN\n", "a: .nan\n", "a: -.Inf\n", "a: -.INF\n", "a: -.iNF\n", "a: +.inf\n", "a: -0\n", "a: +0\n", "a: 00\n",
	"a: 0.\n", "a: 0e0\n", "a: 0 0\n", "a: 1 2\n", "a: 1-2\n", "a: 1+2\n", "a: 1,2\n", "a: 0,5\n", "a: -1,5\n",
	"a: y\n", "a: Y\n", "a: yes\n", "a: no\n", "a: on\n", "a: off\n", "a: True\n", "a: TRUE\n", "a: tRue\n", "a: NULL\n", "a: Null\n",
	"a: ~x\n", "a: ~\n", "a: 0xg\n", "a: 0x_\n", "a: 1_000_000\n", "a: -1_0\n", "a: 0b_1\n", "a: 0o_7\n", "a: +0o7\n", "a: 1.5.\n",
	"a: 1e5.5\n", "a: -e5\n", "a: 9e999\n", "a: 1e-999\n", "1: a\n", "0x1: a\n", "~: a\n", "a: [1, 0x1, 1.5, 2001-01-01, ~, <<]\n",
	// Quoted scalars.
	"a: ''\n", "'': a\n", "\"\": a\n", "a: ''''\n", "a: 'it''s'\n", "'it''s': x\n", "a: 'b'c\n", "'a'b: c\n", "'a' : b\n",
	"'a'  :  b\n", "a: \"b\"\n", "a: \"b'c\"\n", "a: 'b\"c'\n", "a: 'b\\c'\n", "a: \" b \"\n", "a: ' b '\n", "'a':b\n", "\"a\":b\n",
	"a: 'b' # c\n", "a: 'b'#c\n", "a: \"#\"\n", "'#': a\n", "a: 'b' 'c'\n", "\"a\\\": b\": c\n", "'a': 'b'\n",
	"- 'a': b\n  'c': d\n", "- \"a\": b\n", "a: 'b': c\n", "a: \"b\" c\n", "'" + strings.Repeat("k", 998) + "': v\n",
	// Block collections.
	"a:\n- x\n- y\n", "a:\n  - x\n  - y\n", "a:\n - x\n", "- a: b\n  c: d\n- e\n", "- a: b\n c: d\n", "- - x\n  - y\n- z\n",
	"- - x\n - y\n", "- a:\n  - b\n  c: d\n", "- a:\n  - b\n", "- a:\n    b: c\n", "- a:\n  b: c\n", "  a: b\n  c: d\n",
	"  a: b\nc: d\n", "  - a\n  - b\n", "  - a\n- b\n", "a:\n  b: c\n d: e\n", "a:\n  b\n", "a:\n  b\nc: d\n", "a:\n  'b'\n",
	"a:\n  [b]\n", "-\n  a\n", "-\n  a: b\n", "-\n - a\n", "-\na\n", "a: b\n- c\n", "- a\nb: c\n", "a:\n- b\n  - c\n",
	"a:\n  - b\n  c: d\n", "a:\n  - b\n c: d\n", "a:\n- b\nc:\n- d\n", "a: b\n  # c\nd: e\n", "a:\n# c\n  b: d\n",
	"a: # c\n  b: d\n", "- # c\n  a\n", "-   a\n-   b\n", "-   a: b\n    c: d\n", "a:\n    - b\n    - c\n",
	"a:\n  b:\n    c:\n      d: e\n", "a: b\nb: c\na: d\n", "- a:\n  - b\n- c\n", "a:\n- b: c\n  d: e\n- f\n", "- a: b\n  - c\n",
	"a:\n  - b\n  -c\n", "a:\n  - b\n\n  - c\n", "a:\n\n  b: c\n", "- a\n\n\n- b\n", "a:\n-\n  b\n", "a:\n- - b\n  - c\n",
	strings.Repeat("k", 1000) + ": v\n", strings.Repeat("k", 1001) + ": v\n", strings.Repeat("k", 990) + "          : v\n",
	"- " + strings.Repeat("k", 1000) + ": v\n",
	// Documents.
	"a: b\n...\n", "a: b\n... # x\n", "a: b\n...x\n", "---\na: b\n", "--- \na: b\n", "---  # c\na: b\n", "---\n", "", "# c\n",
	"---\n# c\n", "...\n", "---\n...\n", "--- a: b\n", "--- [a]\n", "[a, b]\n", "{a: b}\n", "[a]\n[b]\n", "[a] # c\n",
	"%YAML 1.2\n---\na: b\n", "  %x: y\n", "---\n%x: y\n", "a: b\n   ", "\n\na: b\n", "   \na: b\n", "a: b\n...\n---\nc: d\n",
	// Literal block scalars.
	"t: |\n  a\n", "t: |\n  a", "t: |-\n  a\n", "t: |-\n  a", "t: |\n\n  a\n", "t: |\n \n  a\n", "t: |\n   \n  a\n",
	"t: |\n  a\n   \n", "t: |\n  a\n  \n", "t: |\n  a\n \n", "t: |\n  a\n\n\n", "t: |\n  a\n\nu: b\n", "t: |\n  # c\n",
	"t: |\n  a\n # c\nu: b\n", "t: |\n  a\n# c\n", "t: |\n  a\n  b\n   c\n", "t: |\n   a\n  b\n", "t: |\n    a\n  b: c\n",
	"t: | # c\n  a\n", "t: |#c\n  a\n", "t: |1\n  a\n", "t: |-1\n  a\n", "t: |+\n  a\n", "t: |\n", "t: |", "t: |\nu: v\n",
	"t: |\n a\n", "- |\n a\n", "- |\n  a\n- b\n", "- - |\n  a\n", "- - |\n   a\n", "- a: |\n  b\n", "- a: |\n   b\n",
	"a:\n- |\n b\n", "t:\n  |\n  a\n", "t:\n  |\n a\n", "t:\n  |\n   a\n", "-\n  |\n  a\n", "-\n  |\n a\n", "- a:\n    |\n   x\n",
	"t: |\n  ...\n", "t: |\n  ---\n", "t: |\n  a\n...\n", "t: |\n  a\n  \n  b\n", "t: |\n  a\n\n  b\n", "t: |-\n  a\n\n",
	"t: |-\n\n  a\n", "t: |\n  a  \n", "t: |\n  a\n b\n", "t: |\n  a\n \n b\n", "t: |\n\n", "t: |\n  \n", "t: |\n\n  a",
	"t: |\n  a\n\n  ", "t: |\n  a\n    \n", "|\n a\n", "|\na\n", "a:\n  t: |\n    x\n  u: y\n", "a:\n  t: |\n   x\n",
	"a:\n  t: |\n  x\n", "a: |\n  x\n  y: z\n", "t: |\n    a\n  # c\nu: b\n", "t: |\n    a\n  # c\n    b\n", "  t: |\n  a\n",
	"  t: |\n   a\n", "t: |-\n  a\n\n\nu: b\n", "t: |\n  a\n  \n\n  b\n", "t: |  \n  a\n", "t: |-  # c\n  a\n",
	// Flow collections.
	"a: []\n", "a: {}\n", "a: [ ]\n", "a: { }\n", "a: [[]]\n", "a: [{}]\n", "a: {a: {b: c}}\n", "a: {\"a\":1}\n", "a: {'a':1}\n",
	"a: {\"a\" :1}\n", "a: {a:1}\n", "a: {a :b}\n", "a: {a:b}\n", "a: [a:b]\n", "a: [a: b]\n", "a: [\"a\":b]\n", "a: [a, b]\n",
	"a: [a,b]\n", "a: [a ,b]\n", "a: [ a , b ]\n", "a: [a#b]\n", "a: [a #b]\n", "a: [a?b]\n", "a: [-]\n", "a: [-a]\n", "a: [- a]\n",
	"a: [--]\n", "a: [-,a]\n", "a: {a: -}\n", "a: {a: -b}\n", "a: [?a]\n", "a: [? a]\n", "a: {? a: b}\n", "a: [:a]\n",
	"a: [a, :b]\n", "a: [<<]\n", "a: {<<: b}\n", "a: {a: [b]: c}\n", "a: {[a]: b}\n", "a: {{a: b}: c}\n", "a: {a, b: c}\n",
	"a: {a: b, c}\n", "a: {a: b,}\n", "a: [a,]\n", "a: [,a]\n", "a: [a,,b]\n", "a: [a] b\n", "a: [a]b\n", "a: [a]#b\n",
	"a: [a]]\n", "a: [a}\n", "a: {a: b]\n", "a: {a: b}}\n", "a: ['a'b]\n", "a: ['a' b]\n", "a: ['a', \"b\"]\n", "a: [a b, c d]\n",
	"a: {a b: c d}\n", "a: {a: b c}\n", "a: {\"a\": \"b\"}\n", "a: {a: 'b'}\n", "a: {'a': b}\n", "a: {\"a\"  :  b}\n",
	"a: {a: b: c}\n", "a: {a: b:c}\n", "a: {a: b:}\n", "a: {a: :b}\n", "a: [a:, b]\n", "a: [a:]\n", "a: [http://x]\n",
	"a: {u: http://x:80}\n", "a: [a: ]\n", "a: {a: }\n", "a: {a:}\n", "a: {a}\n", "a: [a]  \n", "a: [\"\"]\n", "a: ['']\n",
	"a: {'': ''}\n", "a: [[[[[[[[[[a]]]]]]]]]]\n", "a: [a'b]\n", "a: [a\"b]\n", "a: {\"a\":-b}\n", "a: {\"a\"::b}\n",
	"a: {\"a\":\"b\"}\n", "a: [a, {b: c}, [d]]\n", "a: [{a: b, c: d}]\n", "a: {a: [b, c], d: {e: f}}\n", "a: {\"a\":[b]}\n",
	"a: {" + strings.Repeat("k", 1000) + ": v}\n", "a: {" + strings.Repeat("é", 600) + ": v}\n",
	"a: " + strings.Repeat("[", 70) + strings.Repeat("]", 70) + "\n",
	// Non-ASCII.
	"a: [é, ü]\n", "é: [a, b]\n", "- é: b\n  ü: c\n", "a: 'é' \n", "éé: {éé: éé}\n", "a: \"é\": b\n", "- [é, {é: é}]\n",
	"t: |\n  é\nu: é\n", "é: b\nc: d\n", "a:\n  é: b\n  c: [é, x]\n", "'é': x\n", "a: é # c\n", "a: 😀: b\n",
	"😀: [😀, 😀]\n", "a: 升级 版本\n", "a:\n- 升\n- 级: x\n  y: z\n", "a: b\u00a0c\n", "a:\u00a0b\n", "a: \u00a0\n",
	"\u00a0: b\n", "a: b\u2028c\n", "a: b\u0085c\n", "a: b\ufeffc\n", "\ufeffa: b\n", "a: b\ue000\n", "a: b\ufffd\n",
	"a: \U0010ffff\n", "a: b\u3000c\n", "a: [b\u3000, c]\n", strings.Repeat("é", 1100) + ": v\n", "a: \xff\n", "a: \xc3\n",
}

// TestFastParseEdges: fastParse leaves each of edgeCases to yaml.v3 or
// parses it exactly as yaml.v3 does.
func TestFastParseEdges(t *testing.T) {
	for _, in := range edgeCases {
		checkFast(t, []byte(in))
	}
}

// TestFastParseLinear: the time fastParse takes grows linearly with the
// length of a line of many nodes, ASCII or not. 16 times the items may
// take up to 64 times as long (quadratic would be 256): the machine is
// shared, so a pair of timings is taken up to three times, and one pair
// within the bound passes.
func TestFastParseLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("times parses")
	}
	for _, item := range []string{"ab", "éé"} {
		timeOf := func(n int) time.Duration {
			s := "a: [" + strings.Repeat(item+", ", n) + "z]\n"
			a := &nodeArena{}
			best := time.Duration(1 << 62)
			runtime.GC()
			// No collection inside a timing: under -race on a busy
			// machine it made 16 times the items take up to 62 times as long.
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			for range 5 {
				start := time.Now()
				if _, _, ok := fastParse(s, a, nil); !ok {
					t.Fatalf("fastParse leaves %q... to yaml.v3", s[:20])
				}
				best = min(best, time.Since(start))
				a.reset()
			}
			return best
		}
		timeOf(1000)
		var tries []string
		linear := false
		for range 3 {
			small, large := timeOf(8000), timeOf(128000)
			tries = append(tries, fmt.Sprintf("%v for 8,000 items, %v for 128,000", small, large))
			if linear = large <= 64*small; linear {
				break
			}
		}
		t.Logf("%q: %s", item, strings.Join(tries, "; "))
		if !linear {
			t.Errorf("%q: %s: more than linear in each try (want at most 64 times as long for 16 times the items)", item, strings.Join(tries, "; "))
		}
	}
}

// edgeFragments are the pieces FuzzFastParseEdges builds documents from:
// the fuzzer's bytes choose them, so that most of what it tries is near
// the part of YAML fastParse parses rather than noise it leaves at once.
var edgeFragments = []string{
	"a", "b", "k1", ": ", ":", "\n", " ", "  ", "    ", "- ", "-", "'", "''", "\"", "[", "]", "{", "}", ", ", ",",
	"|", "|-", "|\n", "# c", "#", "1", "0", "0x1f", ".", "e", "5", "_", "+", "~", "<<", "é", "升", "...", "---", "?",
	"?x", "\n  ", "\n- ", "\n  - ", "a: ", "\n  a: ", "'q'", "\"q\"", "true", "null", "2001-01-02", "T", "Z", "1:2",
	"-.inf", "%", "&", "*", "!", "@", "x:y", " :", "  #", "\n\n", "\n...\n", "\n---\n", "{a: b}", "[x, y]", "\\", ">",
	":\n", "0o7", "0b1", "12345678901234567890", "\u00a0", "\t", "\r", "😀", "\"a\":", "{\"k\":", "- a: ", "\n    ",
	"|\n  x\n", "|-\n  x\n\n", "\n   \n", "y", "Yes", "no", "N", ".5", "1e3", "-0", "09", "1_0", "+1", "0.", "t",
}

// edgeDoc builds a document from data: each byte chooses a fragment.
func edgeDoc(data []byte) []byte {
	var b []byte
	for _, c := range data {
		b = append(b, edgeFragments[int(c)%len(edgeFragments)]...)
	}
	return b
}

// FuzzFastParseEdges checks fastParse (checkFast) on the fuzzer's bytes as
// they are and on the document they choose from edgeFragments. Run it
// with a short -fuzzminimizetime: minimizing a large input for the
// default minute stalls the run.
func FuzzFastParseEdges(f *testing.F) {
	for _, in := range edgeCases {
		f.Add([]byte(in))
	}
	for _, tc := range fastCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<14 {
			return
		}
		checkFast(t, data)
		if doc := edgeDoc(data); len(doc) <= 1<<14 {
			checkFast(t, doc)
		}
	})
}
