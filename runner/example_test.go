package runner_test

import (
	"context"
	"fmt"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// A three-component plan run with a func runner: etcd, then the control
// plane, then the workers.
func Example() {
	comp := func(name, version string, deps ...string) release.ComponentVersion {
		return release.ComponentVersion{Name: name, Version: release.MustParseVersion(version), Type: release.TypeInline, Handler: name, Dependencies: deps}
	}
	rel := func(v string, etcd, k8s string) release.Release {
		return release.Release{Version: release.MustParseVersion(v), Components: []release.ComponentRef{
			{Name: "etcd", Version: release.MustParseVersion(etcd)},
			{Name: "control-plane", Version: release.MustParseVersion(k8s)},
			{Name: "workers", Version: release.MustParseVersion(k8s)},
		}}
	}
	catalog, err := release.NewCatalog(
		[]release.Release{rel("v1.0", "v3.5.0", "v1.33.0"), rel("v1.1", "v3.6.0", "v1.34.0")},
		[]release.ComponentVersion{
			comp("etcd", "v3.5.0"), comp("etcd", "v3.6.0"),
			comp("control-plane", "v1.33.0", "etcd"), comp("control-plane", "v1.34.0", "etcd"),
			comp("workers", "v1.33.0", "control-plane"), comp("workers", "v1.34.0", "control-plane"),
		},
		[]release.UpgradePath{{Rules: []release.Rule{{From: release.MustParseConstraint("v1.0"), To: release.MustParseVersion("v1.1")}}}},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := runner.NewPlan(catalog, path.MustParseState("v1.0"), path.MustParseState("v1.1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	upgrade := runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		fmt.Printf("upgrade %s %s -> %s\n", t.Component, t.From.Version, t.To.Version)
		return nil
	})
	status, err := runner.New(upgrade).Execute(context.Background(), plan, nil)
	fmt.Println("error:", err)
	fmt.Println(status.Phase, status.Progress.Done, "of", status.Progress.Total)
	for _, c := range status.Hops[0].Components {
		fmt.Println(c.Name, c.Phase, "attempts:", c.Attempts)
	}
	// Output:
	// upgrade etcd v3.5.0 -> v3.6.0
	// upgrade control-plane v1.33.0 -> v1.34.0
	// upgrade workers v1.33.0 -> v1.34.0
	// error: <nil>
	// Succeeded 3 of 3
	// control-plane Succeeded attempts: 1
	// etcd Succeeded attempts: 1
	// workers Succeeded attempts: 1
}
