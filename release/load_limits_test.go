package release_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
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

// unknownFieldsDoc is a Release document of about size bytes (at most
// size): half of it unknown keys in the spec, half unknown keys at the top
// level, a key of 33 or 34 bytes a line. It returns the document and how
// many unknown keys it holds.
func unknownFieldsDoc(size int) ([]byte, int) {
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(header + "kind: Release\nmetadata: {name: big}\nspec:\n  version: v1.0\n")
	spec := []byte("  unknown-key-000000000000: value\n")
	top := []byte("unknown-top-0000000000000: value\n")
	keys := 0
	for _, part := range []struct {
		line []byte
		end  int
	}{{spec, size / 2}, {top, size}} {
		line := part.line
		for i := 0; b.Len()+len(line) <= part.end; i++ {
			for j, k := len(line)-9, i; k > 0; j-- { // the digits, right to left
				line[j] = byte('0' + k%10)
				k /= 10
			}
			b.Write(line)
			keys++
		}
	}
	return b.Bytes(), keys
}

// problemStrings is the problems of le as they print.
func problemStrings(le *release.LoadError) []string {
	out := make([]string, len(le.Problems))
	for i, p := range le.Problems {
		out[i] = p.Error()
	}
	return out
}

// yamlNodeParse parses data into yaml.Node values with yaml.v3, as plainly as
// a loader built on it could: the floor Load is measured against.
func yamlNodeParse(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// quickest times small and large alternately, up to three rounds, and
// returns the shortest time of each: the same number of runs, so that
// neither has more chances to be quick, interleaved, so that a slow spell
// of the machine touches both. The garbage collector is off during each
// run (a collection before each): what is timed is the work, not when the
// collector happens to run, which differs between a small input (no
// collection at all) and a large one. Once the rounds have taken 1.5 s,
// no other starts (under -race one round of Load takes about that, of the
// parse several seconds).
func quickest(small, large func()) (time.Duration, time.Duration) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	best := [2]time.Duration{1<<63 - 1, 1<<63 - 1}
	var total time.Duration
	for range 3 {
		for i, f := range []func(){small, large} {
			runtime.GC()
			start := time.Now()
			f()
			d := time.Since(start)
			best[i], total = min(best[i], d), total+d
		}
		if total > 1500*time.Millisecond {
			break
		}
	}
	runtime.GC()
	return best[0], best[1]
}

// TestLoadNearSizeCapIsLinear: Load's time is linear in the size of a
// document up to the 8 MiB per-document cap, for a Release whose spec and
// top level are full of unknown keys (each one a problem: counted past the
// cap of 100 listed, its line found). From about 1.9 MiB to about 7.6 MiB,
// four times the bytes, Load's time may grow at most twice as much as a
// plain yaml.v3 Node parse of the same bytes does in the same run, about
// 8x (quadratic would be 16x, twice more again): the ratio of the two
// growths cancels the machine's speed. The machine may be busy, so the
// measurement is taken up to three times (five when the baseline was
// disturbed) and one within the bound passes
// (unless the parse itself grew more than 8x: then the baseline was
// disturbed, and that try does not count).
func TestLoadNearSizeCapIsLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("loads and parses about 19 MiB of YAML, several times")
	}
	const (
		small, large = 19 << 20 / 10, 76 << 20 / 10 // 1.9 and 7.6 MiB
		bound        = 2.0                          // Load's growth over the parse's
	)
	type input struct {
		data []byte
		keys int
		fsys fstest.MapFS
		err  error // of the last Load
	}
	var in [2]input
	for i, size := range []int{small, large} {
		data, keys := unknownFieldsDoc(size)
		require.Less(t, len(data), 8<<20, "the document is under the 8 MiB per-document cap")
		in[i] = input{data: data, keys: keys, fsys: fstest.MapFS{"big.yaml": {Data: data}}}
	}
	// Each key, in the spec and at the top level, is an unknown field (in
	// the documents measured, only the first 100 found are listed, and the
	// top level is checked before the spec).
	_, err := release.Load(fstest.MapFS{"two.yaml": {Data: []byte(header + "kind: Release\nmetadata: {name: big}\nspec:\n  version: v1.0\n" +
		"  unknown-key-000000000000: value\nunknown-top-0000000000000: value\n")}})
	var le *release.LoadError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, []string{
		"two.yaml:6: spec.unknown-key-000000000000: unknown field; known fields: compatibility, components, supports, track, version",
		"two.yaml:7: unknown-top-0000000000000: unknown field; known fields: apiVersion, kind, metadata, spec",
	}, problemStrings(le))

	var tries []string
	counted := 0 // tries whose baseline was not disturbed
	for try := 0; try < 5 && counted < 3; try++ {
		// The parse first: it allocates more than Load, so that Load
		// finds the heap grown (growing it costs more than the work under
		// -race, whose shadow memory grows too).
		var load, parse [2]time.Duration
		var perr [2]error
		parse[0], parse[1] = quickest(func() { perr[0] = yamlNodeParse(in[0].data) }, func() { perr[1] = yamlNodeParse(in[1].data) })
		require.NoError(t, errors.Join(perr[:]...), "yaml.v3 parses the documents")
		load[0], load[1] = quickest(func() { _, in[0].err = release.Load(in[0].fsys) }, func() { _, in[1].err = release.Load(in[1].fsys) })
		if try == 0 {
			// Refused for their unknown fields, every one counted, not
			// for their size.
			for _, x := range in {
				var le *release.LoadError
				require.ErrorAs(t, x.err, &le, "Load of %d bytes", len(x.data))
				assert.NotContains(t, x.err.Error(), "larger than the limit", "Load of %d bytes", len(x.data))
				assert.Equal(t, x.keys, le.Total(), "problems of %d bytes of unknown keys", len(x.data))
				require.Len(t, le.Problems, 101, "100 problems listed and one that counts the rest")
				assert.True(t, strings.HasPrefix(le.Problems[100].Message, fmt.Sprintf("and %d more problems in this file", x.keys-100)), "the last problem counts the rest: %s", le.Problems[100])
				for _, p := range le.Problems[:100] {
					assert.Contains(t, p.Message, "unknown field", "Load of %d bytes: %s", len(x.data), p)
				}
			}
		}
		lg, pg := float64(load[1])/float64(load[0]), float64(parse[1])/float64(parse[0])
		tries = append(tries, fmt.Sprintf("Load %v -> %v (%.1fx), parse %v -> %v (%.1fx): %.2f",
			load[0].Round(time.Millisecond), load[1].Round(time.Millisecond), lg,
			parse[0].Round(time.Millisecond), parse[1].Round(time.Millisecond), pg, lg/pg))
		t.Logf("%d -> %d bytes: %s", len(in[0].data), len(in[1].data), tries[len(tries)-1])
		// A try whose parse grew more than twice as much as its bytes is
		// void: the machine slowed the large parse, which would hide a
		// quadratic Load.
		if pg > 2*4 {
			continue
		}
		counted++
		if lg/pg <= bound {
			return
		}
	}
	if counted == 0 {
		t.Skipf("the yaml.Node parse itself grew more than 8 times in every try (a disturbed machine): nothing to compare with:\n%s", strings.Join(tries, "\n"))
	}
	t.Errorf("Load's time grew more than %.0f times a yaml.Node parse's from %d to %d bytes (quadratic: 4), or the parse's grew more than 8 times, in every try:\n%s",
		bound, len(in[0].data), len(in[1].data), strings.Join(tries, "\n"))
}
