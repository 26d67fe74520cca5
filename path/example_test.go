package path_test

import (
	"errors"
	"fmt"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// Resolve finds the chain of hops between two releases and prints it.
func ExampleResolve() {
	c, err := release.LoadDir("../testdata/catalog")
	if err != nil {
		panic(err)
	}
	// A version is the state of a one-track system.
	from, err := path.ParseState("v26.06-rc.2")
	if err != nil {
		panic(err)
	}
	to, err := path.ParseState("v26.09")
	if err != nil {
		panic(err)
	}
	route, err := path.Resolve(c, from, to)
	if err != nil {
		panic(err)
	}
	fmt.Print(route)
	// Output:
	// v26.06-rc.2 -> v26.09: 3 hops
	//   1. v26.06-rc.2 -> v26.06-rc.3  pre: cluster-healthy
	//   2. v26.06-rc.3 -> v26.06  pre: cluster-healthy  post: nodes-ready
	//   3. v26.06 -> v26.09  pre: cluster-healthy, etcd-backup, registry-mirror-reachable (optional)  post: nodes-ready, conformance-smoke (optional)
}

// A risky edge is used only once its risks are accepted; the error says
// which risks to accept.
func ExampleAcceptRisks() {
	c, err := release.LoadDir("../testdata/catalog")
	if err != nil {
		panic(err)
	}
	from, to := release.MustParseVersion("v26.06"), release.MustParseVersion("v26.09-rc.1")
	_, err = path.Resolve(c, path.State{"": from}, path.State{"": to})
	var nr *path.NoRouteError
	if errors.As(err, &nr) {
		fmt.Println("accept:", nr.Risks)
	}
	route, err := path.Resolve(c, path.State{"": from}, path.State{"": to}, path.AcceptRisks(nr.Risks...))
	if err != nil {
		panic(err)
	}
	fmt.Print(route)
	// Output:
	// accept: [containerd-v2-config]
	// v26.06 -> v26.09-rc.1: 1 hop
	//   1. v26.06 -> v26.09-rc.1 (deprecated version: "preview build")  risks: containerd-v2-config ("containerd 2.x rewrites config.toml; custom registry mirrors must be declared again")
}

// Targets lists what a system can upgrade to, and why nothing when the list
// is empty.
func ExampleTargets() {
	c, err := release.LoadDir("../testdata/catalog")
	if err != nil {
		panic(err)
	}
	targets, err := path.Targets(c, path.MustParseState("v26.03"))
	if err != nil {
		panic(err)
	}
	for _, t := range targets {
		fmt.Printf("%s in %d hop(s) via %v\n", t.Version, t.Hops, t.Route().Versions())
	}
	_, err = path.Targets(c, path.MustParseState("v26.09"))
	fmt.Println(err)
	// Output:
	// v26.06 in 1 hop(s) via [v26.03 v26.06]
	// v26.06.1 in 2 hop(s) via [v26.03 v26.06 v26.06.1]
	// v26.09 in 2 hop(s) via [v26.03 v26.06 v26.09]
	// path: no version is reachable from v26.09: no usable rule leads out of v26.09
}

// An unknown version gives the nearest known ones.
func ExampleUnknownVersionError() {
	c, err := release.LoadDir("../testdata/catalog")
	if err != nil {
		panic(err)
	}
	_, err = path.Resolve(c, path.MustParseState("v26.03"), path.MustParseState("v26.07"))
	fmt.Println(errors.Is(err, path.ErrUnknownVersion))
	fmt.Println(err)
	// Output:
	// true
	// path: unknown target version v26.07: no release has it; nearest known versions: v26.06, v26.06.1, v26.09-rc.1, v26.09
}

// An Index is built once and answers many questions.
func ExampleNewIndex() {
	c, err := release.LoadDir("../testdata/catalog")
	if err != nil {
		panic(err)
	}
	ix, err := path.NewIndex(c, path.WithGuards(path.KubernetesSkewGuard()))
	if err != nil {
		panic(err)
	}
	for _, from := range []string{"v26.03", "v26.06-rc.1", "v26.06.1"} {
		route, err := ix.Resolve(release.MustParseVersion(from), release.MustParseVersion("v26.09"))
		if err != nil {
			panic(err)
		}
		fmt.Println(route.Versions())
	}
	// Output:
	// [v26.03 v26.06 v26.09]
	// [v26.06-rc.1 v26.06-rc.3 v26.06 v26.09]
	// [v26.06.1 v26.09]
}

// The Kubernetes skew guard keeps kubernetes-master within one minor
// version per hop; an overridable guard may be overridden, and the route
// records it.
func ExampleKubernetesSkewGuard() {
	k8s := func(ver string) release.ComponentVersion {
		return release.ComponentVersion{Name: "kubernetes-master", Version: release.MustParseVersion(ver), Type: release.TypeInline, Handler: "kubeadm"}
	}
	rel := func(ver, k8sVer string) release.Release {
		return release.Release{Name: ver, Version: release.MustParseVersion(ver),
			Components: []release.ComponentRef{{Name: "kubernetes-master", Version: release.MustParseVersion(k8sVer)}}}
	}
	rule := func(from, to string) release.Rule {
		return release.Rule{From: release.MustParseConstraint(from), To: release.MustParseVersion(to)}
	}
	c, err := release.NewCatalog(
		[]release.Release{rel("v1.0", "v1.32.4"), rel("v2.0", "v1.33.3"), rel("v3.0", "v1.34.1")},
		[]release.ComponentVersion{k8s("v1.32.4"), k8s("v1.33.3"), k8s("v1.34.1")},
		[]release.UpgradePath{{Name: "paths", Rules: []release.Rule{rule("v1.0", "v3.0"), rule("v1.0", "v2.0"), rule("v2.0", "v3.0")}}},
	)
	if err != nil {
		panic(err)
	}
	from, to := release.MustParseVersion("v1.0"), release.MustParseVersion("v3.0")

	route, _ := path.Resolve(c, path.State{"": from}, path.State{"": to})
	fmt.Println("no guard:  ", route.Versions())
	route, _ = path.Resolve(c, path.State{"": from}, path.State{"": to}, path.WithGuards(path.KubernetesSkewGuard()))
	fmt.Println("with guard:", route.Versions())

	soft := path.KubernetesSkewGuard()
	soft.Overridable = true
	route, _ = path.Resolve(c, path.State{"": from}, path.State{"": to}, path.WithGuards(soft), path.OverrideGuards(soft.Name))
	fmt.Print(route)
	// Output:
	// no guard:   [v1.0 v3.0]
	// with guard: [v1.0 v2.0 v3.0]
	// v1.0 -> v3.0: 1 hop
	//   1. v1.0 -> v3.0  overrides: kubernetes-minor-skew
}

// A channel keeps a route inside the versions that list it; without one, a
// route between GA versions enters no prerelease unless asked.
func ExampleWithChannel() {
	rel := func(s string) release.Release {
		return release.Release{Name: "r" + s, Version: release.MustParseVersion(s)}
	}
	rule := func(from, to string) release.Rule {
		return release.Rule{From: release.MustParseConstraint(from), To: release.MustParseVersion(to)}
	}
	info := func(s string, channels ...string) release.VersionInfo {
		return release.VersionInfo{Version: release.MustParseVersion(s), Channels: channels}
	}
	c, err := release.NewCatalog(
		[]release.Release{rel("v4.18"), rel("v4.19"), rel("v4.19.1"), rel("v4.20-rc.1"), rel("v4.20")},
		nil,
		[]release.UpgradePath{{Name: "paths",
			Rules: []release.Rule{
				rule("v4.18", "v4.19"), rule("v4.18", "v4.19.1"), rule("v4.18", "v4.20-rc.1"),
				rule(">= v4.19, < v4.20", "v4.20"), rule("v4.20-rc.1", "v4.20"),
			},
			Versions: []release.VersionInfo{
				info("v4.19", "stable", "fast", "candidate"), info("v4.19.1", "fast", "candidate"),
				info("v4.20-rc.1", "candidate"), info("v4.20", "stable", "fast", "candidate"),
			},
		}})
	if err != nil {
		panic(err)
	}
	from, to := release.MustParseVersion("v4.18"), release.MustParseVersion("v4.20")
	for _, opts := range [][]path.Option{
		{path.WithChannel("stable")},
		{path.WithChannel("fast")},
		{path.WithChannel("candidate")},
		{},
		{path.AllowPrereleases()},
	} {
		route, err := path.Resolve(c, path.State{"": from}, path.State{"": to}, opts...)
		if err != nil {
			panic(err)
		}
		fmt.Println(route.Versions())
	}
	// Output:
	// [v4.18 v4.19 v4.20]
	// [v4.18 v4.19.1 v4.20]
	// [v4.18 v4.20-rc.1 v4.20]
	// [v4.18 v4.19.1 v4.20]
	// [v4.18 v4.20-rc.1 v4.20]
}

// Resolve plans across tracks: here a StarlingX major upgrade, from
// platform 13.01.0 with Kubernetes v1.33.0 to platform 27.03.0 with
// Kubernetes v1.35.0. The sequence (highest patch, highest Kubernetes the
// old line supports, the major, the target Kubernetes) comes from the rules
// and the releases' supports constraints alone.
func ExampleResolve_tracks() {
	c, err := release.LoadDir("../testdata/two-track")
	if err != nil {
		panic(err)
	}
	from, _ := path.ParseState("platform=13.01.0,kubernetes=v1.33.0")
	to, _ := path.ParseState("platform=27.03.0,kubernetes=v1.35.0")
	route, err := path.Resolve(c, from, to)
	if err != nil {
		panic(err)
	}
	fmt.Print(route)
	for _, s := range route.States() {
		fmt.Println(s)
	}
	// Output:
	// kubernetes=v1.33.0,platform=13.01.0 -> kubernetes=v1.35.0,platform=27.03.0: 4 hops
	//   1. platform 13.01.0 -> 13.01.2
	//   2. kubernetes v1.33.0 -> v1.34.1
	//   3. platform 13.01.2 -> 27.03.0  pre: iso-uploaded
	//   4. kubernetes v1.34.1 -> v1.35.0
	// kubernetes=v1.33.0,platform=13.01.0
	// kubernetes=v1.33.0,platform=13.01.2
	// kubernetes=v1.34.1,platform=13.01.2
	// kubernetes=v1.34.1,platform=27.03.0
	// kubernetes=v1.35.0,platform=27.03.0
}

// ParseState reads a version (the state of a one-track system) and a
// state across tracks alike; its errors say which part is wrong.
func ExampleParseState() {
	for _, s := range []string{"v26.09", "platform=27.03.0, kubernetes=v1.34.1", "platform=27.03.0,kubernetes"} {
		st, err := path.ParseState(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: tracks %q\n", st, st.Tracks())
	}
	// Output:
	// v26.09: tracks [""]
	// kubernetes=v1.34.1,platform=27.03.0: tracks ["kubernetes" "platform"]
	// path: invalid state "platform=27.03.0,kubernetes": part 2, "kubernetes", is not track=version: a state of several tracks names the track of each version
}
