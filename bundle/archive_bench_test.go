package bundle

import (
	"fmt"
	"testing"
	"time"

	"github.com/hopdag/hopdag/release"
)

// BenchmarkUnpackWalk unpacks a layer of n directories holding one small
// file each and loads it (release.Load walks every directory and stats a
// Chart.yaml in each), at n = 1,000 and 8,000 in the same loop. ns/dir-1k
// and ns/dir-8k are the cost per directory of each; growth is their ratio
// (1 for a linear walk, 8 for one quadratic in the directories).
func BenchmarkUnpackWalk(b *testing.B) {
	layer := func(n int) []byte {
		entries := make([]tarEntry, n)
		for i := range entries {
			entries[i] = tarEntry{name: fmt.Sprintf("catalog/d%05d/notes.txt", i), data: "x"}
		}
		return tarGz(b, entries)
	}
	small, large := layer(1000), layer(8000)
	run := func(data []byte) time.Duration {
		start := time.Now()
		fsys, err := unpack(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := release.Load(fsys); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var ts, tl time.Duration
	b.ReportAllocs()
	for b.Loop() {
		ts += run(small)
		tl += run(large)
	}
	n := float64(b.N)
	perSmall, perLarge := float64(ts)/n/1000, float64(tl)/n/8000
	b.ReportMetric(perSmall, "ns/dir-1k")
	b.ReportMetric(perLarge, "ns/dir-8k")
	b.ReportMetric(perLarge/perSmall, "growth")
}
