package path_test

import (
	"errors"
	"testing"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

var fuzzVersions = []string{
	"v1.0", "v1.1-rc.1", "v1.1-rc.2", "v1.1", "v1.1.1", "v1.2-rc.1", "v1.2", "v2.0-rc.1", "v2.0", "v2.1",
}

// FuzzResolve builds rules from the fuzzer's bytes (and one from-constraint
// written by the fuzzer) and checks that resolving every pair and listing
// every version's targets neither panics nor hangs, and that every answer is
// a valid route or a typed error.
//
// Each rule takes 4 bytes: the kind of from (exact, range, *, >, ||, !=), two
// version indices, and the to index with flags in its high bits (blocked,
// deprecated, risky).
func FuzzResolve(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 1, 1, 3, 6, 0, 6, 0, 8}, ">= v1.0, < v2.0")
	f.Add([]byte{2, 0, 0, 0x49, 0, 3, 0, 0x86, 5, 2, 8, 9}, "*")
	f.Add([]byte{4, 1, 2, 3, 3, 0, 0, 0x26, 0, 9, 0, 0}, "v1.1-rc.1 || >= v1.2-rc.1, != v1.2")
	f.Add([]byte{}, "garbage <<")
	f.Fuzz(func(t *testing.T, data []byte, from string) {
		n := len(fuzzVersions)
		at := func(b byte) string { return fuzzVersions[int(b)%n] }
		var rules []release.Rule
		for len(data) >= 4 && len(rules) < 64 {
			kind, a, b, to := data[0], data[1], data[2], data[3]
			data = data[4:]
			var s string
			switch kind % 6 {
			case 0:
				s = at(a)
			case 1:
				s = ">= " + at(a) + ", < " + at(b)
			case 2:
				s = "*"
			case 3:
				s = "> " + at(a)
			case 4:
				s = at(a) + " || " + at(b)
			case 5:
				s = "!= " + at(a)
			}
			r := release.Rule{From: release.MustParseConstraint(s), To: v(at(to & 0x0f))}
			if to&0x10 != 0 {
				r.Blocked = "fuzz"
			}
			if to&0x20 != 0 {
				r.Deprecated = "fuzz"
			}
			if to&0x40 != 0 {
				r.Risks = []release.Risk{{Name: "r1"}}
			}
			if to&0x80 != 0 {
				r.Risks = append(r.Risks, release.Risk{Name: "r2"})
			}
			rules = append(rules, r)
		}
		if c, err := release.ParseConstraint(from); err == nil {
			rules = append(rules, release.Rule{From: c, To: v(fuzzVersions[len(from)%n])})
		}
		k8sVers := map[string]string{}
		for i, ver := range fuzzVersions {
			k8sVers[ver] = []string{"v1.30.0", "v1.31.0", "v1.33.0"}[i%3]
		}
		s := spec{Versions: fuzzVersions, K8s: k8sVers, Rules: rules, Infos: []release.VersionInfo{notInstallable("v1.1-rc.2")}}
		c, err := s.build()
		if err != nil {
			t.Skip(err)
		}
		for _, o := range []refOpts{
			{},
			{accept: map[string]bool{"r1": true}, guards: []path.Guard{path.KubernetesSkewGuard()}},
			{accept: map[string]bool{"r1": true, "r2": true}, guards: []path.Guard{{Name: "soft", Component: k8s, MaxMinorSkew: 1, Overridable: true}}, overrides: map[string]bool{"soft": true}},
		} {
			o.prereleases = true // the prerelease rule is TestPropertyRoutes's
			g := newRefGraph(c, o, false)
			ix, err := path.NewIndex(c, o.options()...)
			if err != nil {
				t.Fatal(err)
			}
			for src := range g.versions {
				fwd := bfs(g.adj, src)
				for dst := range g.versions {
					r, err := ix.Resolve(g.versions[src], g.versions[dst])
					switch {
					case err == nil:
						g.checkRoute(t, r, "", g.versions[src], g.versions[dst])
						if got, want := g.costOf(g.nodes(r)), g.costOf(g.best(src, dst)); got != want {
							t.Fatalf("%s -> %s: cost %v, the reference finds %v", g.versions[src], g.versions[dst], got, want)
						}
						_ = r.String()
					case errors.Is(err, path.ErrNoRoute):
						if fwd[dst] >= 0 {
							t.Fatalf("%s -> %s: %v, but BFS finds a route", g.versions[src], g.versions[dst], err)
						}
						_ = err.Error()
					default:
						t.Fatalf("unexpected error: %v", err)
					}
				}
				ts, err := ix.Targets(g.versions[src])
				if err != nil && !errors.Is(err, path.ErrNoRoute) {
					t.Fatal(err)
				}
				for _, tg := range ts {
					if want := len(g.best(src, g.index(tg.Version))) - 1; tg.Hops != want {
						t.Fatalf("target %s: %d hops, the reference finds %d", tg.Version, tg.Hops, want)
					}
				}
			}
		}
	})
}
