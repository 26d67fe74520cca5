package release_test

import (
	"cmp"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hopdag/hopdag/release"
)

// loadTimeout bounds one Load in FuzzLoad. A catalog file of the fuzzer's
// size loads in well under a millisecond; anything near this is a hang.
const loadTimeout = 10 * time.Second

// Per-input budget of FuzzLoad, for inputs under 1 MB: no Load may take
// over a second (the bound), nor allocate more than
// fuzzAllocBase plus fuzzAllocPerByte per input byte (parsing into
// yaml.Node alone allocates about 26 per byte; a document's aliases may
// add 10,000 decoded values).
const (
	fuzzMaxTime      = time.Second
	fuzzAllocBase    = 32 << 20
	fuzzAllocPerByte = 100
)

// manifestFS holds one manifest template that fuzzed ComponentVersions can
// name. Its extension keeps Load from reading it as a catalog file.
func manifestFS() fstest.MapFS {
	return fstest.MapFS{"m/configmap.tmpl": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")}}
}

// seedCatalogs returns each file of the sample catalog, a small complete
// catalog in one file (so that cross-document rules run), and every file of
// testdata/invalid and ../testdata/invalid.
func seedCatalogs(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, pattern := range []string{catalogDir + "/*.yaml", catalogDir + "/components/*.yaml", "../testdata/invalid/*/*.yaml", "testdata/invalid/*/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			seeds = append(seeds, b)
		}
	}
	if len(seeds) < 30 {
		tb.Fatalf("only %d seed catalogs", len(seeds))
	}
	return append(seeds, []byte(smallCatalog))
}

// smallCatalog uses every kind and most fields. Seeds stay small: the fuzz
// engine minimizes each new input, and that costs input size times load time.
const smallCatalog = header + `kind: Release
metadata: {name: v26.06-rc.2}
spec:
  version: v26.06-rc.2
  components:
    - {name: etcd, version: v3.5.21}
    - {name: coredns, version: v1.12.0}
  compatibility:
    - {component: coredns, requires: etcd, versions: ">= v3.5, < v3.6"}
---
` + header + `kind: Release
metadata: {name: v26.06}
spec:
  version: v26.06
  track: ""
  supports: {"": "*"}
  components:
    - {name: etcd, version: v3.5.21}
    - {name: coredns, version: v1.12.0}
---
` + header + `kind: ComponentVersion
metadata: {name: etcd-v3.5.21}
spec:
  name: etcd
  version: v3.5.21
  handler: etcd
  before: all
  timeout: 20m
  retries: {attempts: 2, backoff: 30s, maxBackoff: 2m}
  healthChecks: [{name: etcd-healthy, timeout: 5m, interval: 10s, params: {a: b}}]
  params: {dataDir: /var/lib/etcd}
---
` + header + `kind: ComponentVersion
metadata: {name: coredns-v1.12.0}
spec:
  name: coredns
  version: v1.12.0
  dependencies: [etcd]
  group: dns
  expectedDuration: 60s
  manifests:
    - file: m/configmap.tmpl
    - {name: extra, template: "kind: ConfigMap"}
---
` + header + `kind: UpgradePath
metadata: {name: paths}
spec:
  rules:
    - from: ">= v26.06-rc.1, < v26.06"
      to: v26.06
      risks: [{name: r, message: m, url: "https://example.com"}]
      preChecks: [{name: healthy, required: true}]
      postChecks: [{name: ready}]
    - {from: v26.06-rc.2, to: v26.06-rc.2, blocked: "no", deprecated: "yes"}
  versions:
    - {version: v26.06-rc.2, installable: false, deprecated: old}
`

// FuzzLoad loads arbitrary bytes as a catalog file: Load must not panic nor
// hang, and must either return a valid catalog or a sorted *LoadError.
func FuzzLoad(f *testing.F) {
	for _, s := range seedCatalogs(f) {
		f.Add(s)
	}
	f.Add([]byte(header + "kind: ComponentVersion\nmetadata: {name: a}\nspec: {name: a, version: v1.0, manifests: [{file: catalog.yaml}]}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("---\n- x\n---\nhello\n---\n~\n"))
	f.Add([]byte(header + "kind: Release\nmetadata: {name: r}\nspec: &s {version: v1.0, components: *s}\n"))
	f.Add([]byte(header + "kind: Release\nmetadata: {name: r}\nspec: &s {<<: *s, version: v1.0}\n"))
	f.Add([]byte(header + "kind: Release\nmetadata: &m {name: r, <<: [*m, *m]}\nspec: {version: v1.0}\n---\n[\n---\n\x00\n"))
	// Issue 25: a label's value decoded again, through an alias, as a
	// constraint and as a version (point 2); 400 aliases of a 128 KB
	// constraint, which took 15 s and 987 MB (point 3).
	f.Add([]byte(header + "kind: UpgradePath\nmetadata:\n  name: p\n  labels: {x: &b \">= v1.0.0,, < v2.0.0\"}\nspec:\n  rules:\n  - {from: *b, to: v2.0.0, blocked: data loss}\n"))
	f.Add([]byte(header + "kind: Release\nmetadata:\n  name: r\n  labels: {v: &v \"3.0.0.0\"}\nspec:\n  version: *v\n  components: []\n"))
	aliased, _ := aliasedConstraint(128<<10, 400)
	f.Add(aliased)
	f.Add(doublingAliases(1, 70))

	manifests := manifestFS()
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := maps.Clone(manifests)
		fsys["catalog.yaml"] = &fstest.MapFile{Data: data}
		type result struct {
			c       *release.Catalog
			err     error
			elapsed time.Duration
			alloc   uint64
		}
		done := make(chan result, 1)
		go func() {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before, start := ms.TotalAlloc, time.Now()
			c, err := release.Load(fsys)
			elapsed := time.Since(start)
			runtime.ReadMemStats(&ms)
			done <- result{c, err, elapsed, ms.TotalAlloc - before}
		}()
		var r result
		select {
		case r = <-done:
		case <-time.After(loadTimeout):
			t.Fatalf("Load did not return within %v on a %d-byte catalog file", loadTimeout, len(data))
		}
		if len(data) < 1<<20 {
			if r.elapsed > fuzzMaxTime {
				t.Errorf("Load took %v on a %d-byte catalog file, want at most %v", r.elapsed, len(data), fuzzMaxTime)
			}
			if limit := uint64(fuzzAllocBase + fuzzAllocPerByte*len(data)); r.alloc > limit {
				t.Errorf("Load allocated %d bytes on a %d-byte catalog file, want at most %d", r.alloc, len(data), limit)
			}
		}
		checkLoadResult(t, r.c, r.err)
	})
}

func checkLoadResult(t *testing.T, c *release.Catalog, err error) {
	if err != nil {
		if c != nil {
			t.Fatalf("Load returned a catalog with its error %v", err)
		}
		var le *release.LoadError
		if !errors.As(err, &le) || !errors.Is(err, release.ErrInvalidCatalog) {
			t.Fatalf("Load error %T %v is not a *LoadError", err, err)
		}
		if len(le.Problems) == 0 {
			t.Fatalf("LoadError without problems")
		}
		for _, p := range le.Problems {
			if p.File == "" || p.Message == "" || p.Line < 0 {
				t.Fatalf("problem %#v lacks a file or a message", p)
			}
		}
		if !slices.IsSortedFunc(le.Problems, func(a, b release.Problem) int {
			return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
		}) {
			t.Fatalf("problems not sorted by file and line:\n%v", err)
		}
		return
	}
	if c == nil {
		t.Fatal("Load returned neither a catalog nor an error")
	}
	vs := c.Versions()
	if !slices.IsSortedFunc(vs, release.Version.Compare) {
		t.Fatalf("Versions() not sorted: %v", vs)
	}
	for _, ver := range vs {
		if _, ok := c.Release(ver); !ok {
			t.Fatalf("Release(%s) not found, but Versions() lists it", ver)
		}
	}
	// NewCatalog applies the rules Load applied: what loads, builds.
	if _, err := release.NewCatalog(c.Releases, c.Components, c.Paths); err != nil {
		t.Fatalf("Load accepted the catalog, NewCatalog refuses its values: %v", err)
	}
	if _, err := json.Marshal(c); err != nil {
		t.Fatalf("json.Marshal of a loaded catalog: %v", err)
	}
}

// FuzzParseVersion checks ParseVersion never panics, keeps the spelling,
// and orders consistently: Compare is antisymmetric and agrees with Equal,
// Less and Canonical.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{
		"v26.06", "v26.06-rc.2", "26.06.01", "13.01.2", "v1.34.1", "26.6.0", "v26.06-rc.10", "v26.06-rc10",
		"1.0.0-alpha.beta+build.1", "v26.06-", "1.2.3.4", "18446744073709551616.0", "v1.0-rc01", "V1.2",
	} {
		f.Add(s, "v26.06")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		va, errA := release.ParseVersion(a)
		vb, errB := release.ParseVersion(b)
		if errA != nil {
			if !va.IsZero() {
				t.Fatalf("ParseVersion(%q) returned %#v with error %v", a, va, errA)
			}
			if !strings.HasPrefix(errA.Error(), "release: invalid version ") {
				t.Fatalf("ParseVersion(%q) error %q lacks the prefix", a, errA)
			}
			return
		}
		if va.Original() != a || va.String() != a {
			t.Fatalf("ParseVersion(%q).Original() = %q", a, va.Original())
		}
		if va.Compare(va) != 0 || !va.Equal(va) || va.Less(va) {
			t.Fatalf("%q does not equal itself", a)
		}
		canon, err := release.ParseVersion(va.Canonical())
		if err != nil || !canon.Equal(va) || canon.Canonical() != va.Canonical() {
			t.Fatalf("Canonical %q of %q: parse error %v or not equal", va.Canonical(), a, err)
		}
		text, _ := va.MarshalText()
		var back release.Version
		if err := back.UnmarshalText(text); err != nil || back != va {
			t.Fatalf("text round trip of %q: %v, %#v", a, err, back)
		}
		js, _ := json.Marshal(va)
		if err := json.Unmarshal(js, &back); err != nil || back != va {
			t.Fatalf("JSON round trip of %q: %v, %#v", a, err, back)
		}
		if errB != nil {
			return
		}
		ab, ba := va.Compare(vb), vb.Compare(va)
		if ab != -ba || ab < -1 || ab > 1 {
			t.Fatalf("Compare(%q, %q) = %d but Compare(%q, %q) = %d", a, b, ab, b, a, ba)
		}
		if va.Equal(vb) != (ab == 0) || va.Less(vb) != (ab < 0) {
			t.Fatalf("Equal/Less disagree with Compare(%q, %q) = %d", a, b, ab)
		}
		if (va.Canonical() == vb.Canonical()) != (ab == 0) {
			t.Fatalf("Compare(%q, %q) = %d but Canonical %q and %q", a, b, ab, va.Canonical(), vb.Canonical())
		}
		if va.SameCore(vb) != (va.Major() == vb.Major() && va.Minor() == vb.Minor() && va.Patch() == vb.Patch()) {
			t.Fatalf("SameCore(%q, %q)", a, b)
		}
	})
}

// FuzzParseConstraint checks ParseConstraint never panics, keeps the
// spelling, and that Normalized means the same constraint.
func FuzzParseConstraint(f *testing.F) {
	for _, s := range []string{
		">= v26.06-rc.2, < v26.07", ">= v26.06-rc.1, < v26.06", ">= v26.03", "v26.06", "= v26.06-rc.2",
		"v26.03 || >= v26.06, < v26.09", "*", "!= v26.06", "~1.2", ">= v26.06,", "", "=> 1.0", ">=v1.0,<=v2.0||v3.0",
	} {
		f.Add(s, "v26.06-rc.3")
	}
	f.Fuzz(func(t *testing.T, s, ver string) {
		c, err := release.ParseConstraint(s)
		if err != nil {
			if !c.IsZero() {
				t.Fatalf("ParseConstraint(%q) returned %q with error %v", s, c.Normalized(), err)
			}
			return
		}
		if c.String() != s || c.IsZero() {
			t.Fatalf("ParseConstraint(%q).String() = %q", s, c.String())
		}
		norm, err := release.ParseConstraint(c.Normalized())
		if err != nil {
			t.Fatalf("Normalized %q of %q does not parse: %v", c.Normalized(), s, err)
		}
		if norm.Normalized() != c.Normalized() {
			t.Fatalf("Normalized is not a fixed point: %q -> %q -> %q", s, c.Normalized(), norm.Normalized())
		}
		if exact, ok := c.Exact(); ok && !c.Check(exact) {
			t.Fatalf("%q does not admit its own exact version %s", s, exact)
		}
		v, err := release.ParseVersion(ver)
		if err != nil {
			return
		}
		if c.Check(v) != norm.Check(v) {
			t.Fatalf("%q and its Normalized %q disagree on %s", s, c.Normalized(), ver)
		}
		if v.Prerelease() != "" && c.Check(v) && !strings.Contains(s, "-") {
			t.Fatalf("%q names no prerelease but admits %s", s, ver)
		}
	})
}
