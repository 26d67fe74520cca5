package release_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/hopdag/hopdag/release"
)

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
