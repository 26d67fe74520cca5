package bundle

import (
	"context"
	"runtime"
	"testing"

	"oras.land/oras-go/v2/registry/remote"

	"github.com/hopdag/hopdag/bundle/bundletest"
)

// BenchmarkPullManyLayers pulls, from a local registry with no cache (into
// memory), a manifest naming four distinct 40 MiB layers, which Pull
// refuses ("want one layer"); and, in the same loop, a one-layer bundle
// of a few kilobytes as the baseline. MiB-alloc/op is what the refused
// pull allocated (runtime.MemStats.TotalAlloc), x-layers that over the
// 160 MiB of layers the manifest names (about 2.4 when everything was
// downloaded before the check), x-small that over the small pull's.
func BenchmarkPullManyLayers(b *testing.B) {
	r := bundletest.Start(b)
	four, blobs := distinctLayers(4, 40<<20)
	repo, err := remote.NewRepository(r.Addr + "/hopdag/four")
	if err != nil {
		b.Fatal(err)
	}
	repo.PlainHTTP = true
	rawBundle{layers: four, blobs: blobs}.push(b, repo, "v1")
	blobs = nil
	small, err := remote.NewRepository(r.Addr + "/hopdag/small")
	if err != nil {
		b.Fatal(err)
	}
	small.PlainHTTP = true
	one, oneBlob := distinctLayers(1, 4<<10)
	rawBundle{layers: one, blobs: oneBlob}.push(b, small, "v1")
	ctx := context.Background()
	alloc := func(ref string) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _ = New().Pull(ctx, ref) // both refused: many layers, and a layer that is not gzip
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	var many, base uint64
	for b.Loop() {
		many += alloc(r.Ref("hopdag/four:v1"))
		base += alloc(r.Ref("hopdag/small:v1"))
	}
	n := float64(b.N)
	b.ReportMetric(float64(many)/n/(1<<20), "MiB-alloc/op")
	b.ReportMetric(float64(many)/n/float64(4*40<<20), "x-layers")
	b.ReportMetric(float64(many)/float64(base), "x-small")
}
