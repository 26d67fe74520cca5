package bundle_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopdag/hopdag/bundle"
	"github.com/hopdag/hopdag/bundle/bundletest"
)

const (
	benchReleases   = 2000
	benchComponents = 20
)

// writeBenchCatalog writes a catalog of benchReleases releases shipping
// benchComponents components each (component j gets a new version every
// j%5+1 releases; a third are manifest components with a template file),
// with an UpgradePath linking each release to the next.
func writeBenchCatalog(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	write := func(name, data string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	relVersion := func(i int) string { return fmt.Sprintf("v%d.%02d", 20+i/100, i%100) }
	compName := func(j int) string { return fmt.Sprintf("component-%02d", j) }
	compVersion := func(j, k int) string { return fmt.Sprintf("v%d.%d.%d", 1+j%3, k/10, k%10) }
	step := func(j int) int { return j%5 + 1 }
	for j := range benchComponents {
		var b strings.Builder
		for k := 0; k*step(j) < benchReleases; k++ {
			fmt.Fprintf(&b, "---\napiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata:\n  name: %s-%s\nspec:\n  name: %s\n  version: %s\n  expectedDuration: 90s\n",
				compName(j), compVersion(j, k), compName(j), compVersion(j, k))
			if j > 0 {
				fmt.Fprintf(&b, "  dependencies: [%s]\n", compName(j-1))
			}
			if j%3 == 2 {
				fmt.Fprintf(&b, "  type: manifest\n  manifests: [{file: manifests/%s.yaml}]\n", compName(j))
			} else {
				fmt.Fprintf(&b, "  type: inline\n  handler: %s\n", compName(j))
			}
		}
		write("components/"+compName(j)+".yaml", b.String())
		if j%3 == 2 {
			write("manifests/"+compName(j)+".yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+compName(j)+"}\ndata: {version: \"{{ .Version }}\"}\n")
		}
	}
	for f := 0; f < benchReleases/100; f++ {
		var b strings.Builder
		for i := f * 100; i < (f+1)*100; i++ {
			fmt.Fprintf(&b, "---\napiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata:\n  name: r-%s\nspec:\n  version: %s\n  components:\n", relVersion(i), relVersion(i))
			for j := range benchComponents {
				fmt.Fprintf(&b, "    - {name: %s, version: %s}\n", compName(j), compVersion(j, i/step(j)))
			}
		}
		write(fmt.Sprintf("releases/%02d.yaml", f), b.String())
	}
	var b strings.Builder
	b.WriteString("apiVersion: hopdag.io/v1alpha1\nkind: UpgradePath\nmetadata:\n  name: paths\nspec:\n  rules:\n")
	for i := 1; i < benchReleases; i++ {
		fmt.Fprintf(&b, "    - {from: %s, to: %s}\n", relVersion(i-1), relVersion(i))
	}
	write("upgradepath.yaml", b.String())
	return dir
}

// orasBinary returns $HOPDAG_ORAS, or skips (fails with CI=true).
func orasBinary(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv("HOPDAG_ORAS")
	if bin == "" {
		msg := `HOPDAG_ORAS is not set: build the oras CLI with eval "$(tools/env.sh oras)" from the repository root`
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return bin
}

// BenchmarkPull pulls a 2,000-release catalog bundle from a local
// registry into a release.Catalog (resolve, copy into the cache with digest
// checks, unpack, strict load), interleaved in the same loop with `oras
// pull` of the same reference into a directory. cold: a new Client and an
// empty cache each time, against oras with no cache; cached: one Client
// whose cache holds the bundle (one tag resolve and a referrers query go to
// the registry; the catalog of a digest already loaded is not parsed
// again: a controller's reconcile loop), against oras with ORAS_CACHE
// filled; cached-disk: a new Client each time over the same filled cache
// directory, as each `hopdag plan oci://...` is a new process (the blobs
// come from the cache, the catalog is parsed again), against the same
// oras. x-oras is hopdag's time over oras's (target: at most 1.0). oras
// runs as a process, as users run it; hopdag as a library call.
func BenchmarkPull(b *testing.B) {
	benchPull(b, func(b *testing.B, c *bundle.Client, ref string) {
		got, err := c.Pull(context.Background(), ref)
		if err != nil {
			b.Fatal(err)
		}
		if len(got.Catalog.Releases) != benchReleases {
			b.Fatalf("pulled %d releases, want %d", len(got.Catalog.Releases), benchReleases)
		}
	})
}

// BenchmarkFetch is BenchmarkPull without the load: what `oras pull` does
// (fetch, check digests, unpack, write the files to a directory), so that
// x-oras compares the same work.
func BenchmarkFetch(b *testing.B) {
	benchPull(b, func(b *testing.B, c *bundle.Client, ref string) {
		got, err := c.Fetch(context.Background(), ref)
		if err != nil {
			b.Fatal(err)
		}
		out := tempDir(b)
		defer os.RemoveAll(out)
		if err := os.CopyFS(out, got.Files); err != nil {
			b.Fatal(err)
		}
	})
}

func benchPull(b *testing.B, pull func(b *testing.B, c *bundle.Client, ref string)) {
	orasBin := orasBinary(b)
	r := bundletest.Start(b)
	ctx := context.Background()
	dir := writeBenchCatalog(b)
	ref := r.Ref("hopdag/big:v1")
	if _, err := client(b).Push(ctx, dir, ref); err != nil {
		b.Fatal(err)
	}
	plainRef := strings.TrimPrefix(ref, "oci://")
	for _, mode := range []string{"cold", "cached", "cached-disk"} {
		b.Run(mode, func(b *testing.B) {
			cache, orasCache := b.TempDir(), b.TempDir()
			warm := client(b, bundle.WithCache(cache))
			if mode != "cold" {
				pull(b, warm, ref)
				orasPull(b, orasBin, plainRef, orasCache)
			}
			var ours, theirs time.Duration
			b.ReportAllocs()
			for b.Loop() {
				c, oc, cold := warm, orasCache, ""
				switch mode {
				case "cold":
					cold = tempDir(b)
					c, oc = client(b, bundle.WithCache(cold)), ""
				case "cached-disk":
					// No memo of the last process: only the cache directory.
					c = client(b, bundle.WithCache(cache))
				}
				start := time.Now()
				pull(b, c, ref)
				ours += time.Since(start)
				theirs += orasPull(b, orasBin, plainRef, oc)
				if cold != "" {
					os.RemoveAll(cold)
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(ours)/float64(theirs), "x-oras")
			b.ReportMetric(float64(ours)/n/1e6, "hopdag-ms/op")
			b.ReportMetric(float64(theirs)/n/1e6, "oras-ms/op")
		})
	}
}

// orasPull runs `oras pull` of ref into a new directory and returns how
// long it took.
func orasPull(b *testing.B, bin, ref, cache string) time.Duration {
	b.Helper()
	out := tempDir(b)
	defer os.RemoveAll(out)
	cmd := exec.Command(bin, "pull", "--plain-http", "--no-tty", "-o", out, ref)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+out)
	if cache != "" {
		cmd.Env = append(cmd.Env, "ORAS_CACHE="+cache)
	}
	start := time.Now()
	data, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("oras pull %s: %v\n%s", ref, err, data)
	}
	if _, err := os.Stat(filepath.Join(out, "catalog", "upgradepath.yaml")); err != nil {
		b.Fatalf("oras pull did not unpack the catalog: %v\n%s", err, data)
	}
	return d
}

func tempDir(b *testing.B) string {
	d, err := os.MkdirTemp("", "hopdag-bench-")
	if err != nil {
		b.Fatal(err)
	}
	return d
}
