package release_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/hopdag/hopdag/internal/cputime"
	"github.com/hopdag/hopdag/release"
)

// measureLoad loads fsys under testing.Benchmark, so that memory comes
// from the testing package's own accounting, and returns the CPU time
// (which the load of a shared machine does not stretch, unlike the wall
// clock) and bytes allocated per Load with the error of the last Load.
func measureLoad(t *testing.T, fsys fstest.MapFS) (time.Duration, int64, error) {
	t.Helper()
	var err error
	loads := 0
	var r testing.BenchmarkResult
	cpu := cputime.Of(func() {
		r = testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, err = release.Load(fsys)
				loads++
			}
		})
	})
	require.Positive(t, r.N, "testing.Benchmark ran no Load")
	return cpu / time.Duration(loads), r.AllocedBytesPerOp(), err
}

// unknownKeys is a ComponentVersion document whose spec holds n unknown
// keys of about 32 bytes each: well-formed YAML, hostile in size.
func unknownKeys(n int) []byte { return unknownKeysOf("big", n) }

// unknownKeysOf is unknownKeys for a component of that name; the first
// unknown key is on line 8.
func unknownKeysOf(name string, n int) []byte {
	var b bytes.Buffer
	b.WriteString(header + "kind: ComponentVersion\nmetadata: {name: " + name + "}\nspec:\n  name: " + name + "\n  version: v1.0\n  handler: " + name + "\n")
	line := []byte("  unknown-key-000000000000: value\n")
	for i := range n {
		for j, k := 25, i; j >= 14; j-- { // the digits, right to left
			line[j] = byte('0' + k%10)
			k /= 10
		}
		b.Write(line)
	}
	return b.Bytes()
}

// TestLoadHostileMapping: a well-formed 50 MiB document with 1.6 million
// unknown keys took over 9 minutes and 1.6 GB (yaml.v3's duplicate-key
// check compares every pair of keys). It is refused by its size, with the
// limit in the message, in under 5 s and 512 MiB.
func TestLoadHostileMapping(t *testing.T) {
	data := unknownKeys(1_600_000)
	require.Greater(t, len(data), 50<<20, "the generated document is 50 MiB")
	elapsed, alloc, err := measureLoad(t, fstest.MapFS{"big.yaml": {Data: data}})
	require.Error(t, err)
	assert.Equal(t, fmt.Sprintf("release: invalid catalog: 1 problem\n  big.yaml:1: YAML document of %d bytes is larger than the limit of 8388608 (8 MiB); split it into smaller documents; a catalog document is usually a few kilobytes", len(data)), err.Error())
	assert.Less(t, elapsed, 5*time.Second, "CPU time of a Load of a 50 MiB mapping")
	assert.Less(t, alloc, int64(512<<20), "bytes allocated by Load of a 50 MiB mapping")
	t.Logf("50 MiB mapping: %v, %d MiB allocated", elapsed, alloc>>20)
}

// TestLoadHostileBinary: 50 MiB of random bytes said "invalid leading
// UTF-8 octet", with no line.
func TestLoadHostileBinary(t *testing.T) {
	data := make([]byte, 50<<20)
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(data)
	copy(data, "apiVersion: hopdag.io/v1alpha1\nkind: Release\n")
	data[46] = 0xff
	elapsed, alloc, err := measureLoad(t, fstest.MapFS{"random.yaml": {Data: data}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "random.yaml:3: not YAML (binary data at byte 46); a catalog file is UTF-8 text")
	assert.Less(t, elapsed, 5*time.Second, "CPU time of a Load of 50 MiB of random bytes")
	assert.Less(t, alloc, int64(512<<20), "bytes allocated by Load of 50 MiB of random bytes")
}

// nodeParse is the time a plain yaml.v3 parse of data into yaml.Node takes
// (best of two): the floor of any loader built on yaml.v3.
func nodeParse(t *testing.T, data []byte) time.Duration {
	best := time.Duration(1 << 62)
	for range 2 {
		start := time.Now()
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var n yaml.Node
			if err := dec.Decode(&n); err == io.EOF {
				break
			} else {
				require.NoError(t, err)
			}
		}
		best = min(best, time.Since(start))
	}
	return best
}

// bestLoad is the best of two Loads, and the error of the last.
func bestLoad(fsys fstest.MapFS) (time.Duration, error) {
	best := time.Duration(1 << 62)
	var err error
	for range 2 {
		start := time.Now()
		_, err = release.Load(fsys)
		best = min(best, time.Since(start))
	}
	return best, err
}

// TestLoadLargeMappingIsLinear: a valid 2 MB params map took 6.7 s, and 4
// MB of keys 42.7 s (quadratic). Loading now costs a small multiple of
// parsing the same bytes into yaml.Node, measured in the same test, for a
// valid 2 MB map and for 1 MB of unknown keys (whose problems are capped).
func TestLoadLargeMappingIsLinear(t *testing.T) {
	var params bytes.Buffer
	params.WriteString(header + "kind: ComponentVersion\nmetadata: {name: p}\nspec:\n  name: p\n  version: v1.0\n  handler: p\n  params:\n")
	for i := range 70_000 {
		fmt.Fprintf(&params, "    key-%08d: value-%08d\n", i, i)
	}
	require.Greater(t, params.Len(), 2_000_000)
	load, err := bestLoad(fstest.MapFS{"p.yaml": {Data: params.Bytes()}})
	require.NoError(t, err)
	parse := nodeParse(t, params.Bytes())
	assert.Less(t, load, 4*parse+50*time.Millisecond, "Load of a 2 MB params map: %v, a yaml.Node parse of it: %v", load, parse)

	keys := unknownKeys(35_000)
	load, err = bestLoad(fstest.MapFS{"k.yaml": {Data: keys}})
	require.Error(t, err)
	parse = nodeParse(t, keys)
	assert.Less(t, load, 4*parse+50*time.Millisecond, "Load of 2 MB of unknown keys: %v, a yaml.Node parse of it: %v", load, parse)
	var le *release.LoadError
	require.ErrorAs(t, err, &le)
	assert.Len(t, le.Problems, 101, "100 problems and one that counts the rest")
	assert.Equal(t, 35_000-100, le.Omitted)
	assert.Equal(t, 35_000, le.Total())
	assert.Equal(t, "k.yaml:108: and 34900 more problems in this file, not listed (at most 100 per file are); fix the problems listed and load again", le.Problems[100].Error())
	assert.True(t, strings.HasPrefix(err.Error(), "release: invalid catalog: 35000 problems (34900 not listed)\n"), "summary line of %.200s", err)
}

// TestLoadProblemCaps: at most 100 problems per file and 1,000 in all are
// listed; the rest are counted.
func TestLoadProblemCaps(t *testing.T) {
	fsys := fstest.MapFS{}
	for f := range 12 {
		fsys[fmt.Sprintf("f%02d.yaml", f)] = &fstest.MapFile{Data: unknownKeysOf(fmt.Sprintf("c%02d", f), 101)}
	}
	_, err := release.Load(fsys)
	var le *release.LoadError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 12*101-1000, le.Omitted)
	listed, summaries := 0, 0
	for _, p := range le.Problems {
		if strings.HasPrefix(p.Message, "and ") {
			summaries++
			continue
		}
		listed++
	}
	assert.Equal(t, 1000, listed)
	// f00..f09 each lose one problem to the per-file cap; then the total
	// is reached: one summary for f10 and f11.
	assert.Equal(t, 11, summaries)
	for _, want := range []string{
		"f00.yaml:108: and 1 more problem in this file, not listed (at most 100 per file are)",
		"f09.yaml:108: and 1 more problem in this file, not listed (at most 100 per file are)",
		"f10.yaml:8: and 202 more problems from here on, not listed (at most 1000 in all are)",
	} {
		assert.True(t, strings.Contains(err.Error(), want), "the error lacks %q", want)
	}
}

// A file past the per-file cap lists its problems of the lowest lines,
// whatever order they were found in: a document's top-level keys are
// checked before its spec, and here the unknown top-level keys come after
// the spec's in the text. The summary sits at the first line not listed.
func TestLoadProblemCapKeepsFirstLines(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata: {name: r}\nspec:\n  version: v1.0\n")
	for i := range 100 {
		fmt.Fprintf(&b, "  specKey%03d: x\n", i) // lines 6..105
	}
	for i := range 100 {
		fmt.Fprintf(&b, "topKey%03d: x\n", i) // lines 106..205
	}
	_, err := release.Load(fstest.MapFS{"r.yaml": {Data: []byte(b.String())}})
	var le *release.LoadError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 100, le.Omitted)
	var lines []int
	for _, p := range le.Problems {
		lines = append(lines, p.Line)
	}
	require.Len(t, lines, 101, "100 problems and the summary")
	for i, line := range lines[:100] {
		assert.Equal(t, 6+i, line, "problem %d is at line %d, want the spec's keys (lines 6 to 105) listed first", i, line)
	}
	assert.Equal(t, 106, lines[100], "the summary's line: the first problem not listed")
	assert.Contains(t, le.Problems[100].Message, "and 100 more problems in this file")
}

// TestLoadNestingLimit: YAML nested deeper than yaml.v3's 10,000 levels is
// reported with the limit.
func TestLoadNestingLimit(t *testing.T) {
	deep := header + "kind: Release\nmetadata: {name: r}\nspec:\n  version: " + strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001) + "\n"
	_, err := release.Load(fstest.MapFS{"d.yaml": {Data: []byte(deep)}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "d.yaml:5: invalid YAML: YAML nested deeper than the limit of 10000 levels")
}

// TestLoadHostileShapesAreLinear: two shapes that were quadratic in our
// own code (not yaml.v3's): an UpgradePath with 40,000 spec keys and
// 40,000 rules (every rule's line looked up by scanning the spec's keys:
// 840 KB took 12.6 s), and a mapping of 16,000 keys merged 16,000 times
// (each merged key decoded and reported again: 320 KB took 6.2 s and
// reported 160,000,002 problems). Both now cost a small multiple of a
// yaml.Node parse; the merges stop at the alias limit.
func TestLoadHostileShapesAreLinear(t *testing.T) {
	var rules bytes.Buffer
	rules.WriteString(header + "kind: UpgradePath\nmetadata: {name: p}\nspec:\n")
	for i := range 40_000 {
		fmt.Fprintf(&rules, "  k%07d: 1\n", i)
	}
	rules.WriteString("  rules:\n")
	for range 40_000 {
		rules.WriteString("  - {}\n")
	}
	var merges bytes.Buffer
	merges.WriteString(header + "kind: Release\nmetadata: {name: r}\nspec:\n  version: v1.0\n  x: &a\n")
	for i := range 16_000 {
		fmt.Fprintf(&merges, "    k%07d: 1\n", i)
	}
	merges.WriteString("  <<: [*a" + strings.Repeat(", *a", 16_000-1) + "]\n")
	for _, tt := range []struct {
		name     string
		data     []byte
		problems int
	}{
		// 40,000 unknown keys, and no from and no to in each rule.
		{"rules of a spec with many keys", rules.Bytes(), 40_000 + 2*40_000},
		// x is unknown, and the merges bring in 2.3 GB of keys and
		// values, over the limit (maxAliasBytes): nothing is merged.
		{"a large mapping merged many times", merges.Bytes(), 1 + 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			load, err := bestLoad(fstest.MapFS{"p.yaml": {Data: tt.data}})
			var le *release.LoadError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, tt.problems, le.Total(), "problems found")
			// Each of the 120,000 problems costs a little (counted past the
			// cap, its location found): a bound well under what the
			// quadratic walk took (12.6 s, 100x the parse) that a loaded
			// machine keeps to.
			parse := nodeParse(t, tt.data)
			assert.Less(t, load, 10*parse+200*time.Millisecond, "Load of %d bytes: %v, a yaml.Node parse of it: %v", len(tt.data), load, parse)
		})
	}
}
