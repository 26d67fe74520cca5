package runner_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// The dry run of a plan from the sample catalog: hops, batches, critical
// paths, expected durations and checks, before anything runs.
func ExampleNewPlan() {
	catalog, err := release.LoadDir("../testdata/catalog")
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := runner.NewPlan(catalog, path.MustParseState("v26.06-rc.3"), path.MustParseState("v26.06"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(plan)
	// Output:
	// plan v26.06-rc.3 -> v26.06: 1 hop, 1 component, expected 1m30s
	// hop 1/1 v26.06-rc.3 -> v26.06: 1 component, expected 1m30s (serial 1m30s)
	//   pre-checks: cluster-healthy (required)
	//   batch 1: provider
	//   critical path: provider (1m30s)
	//   post-checks: nodes-ready (required)
}

// A run that fails, resumed from its status: the component that succeeded
// is not run again, the one that failed runs again as attempt 2.
func ExampleExecutor_Execute_resume() {
	comp := func(name, version string, deps ...string) release.ComponentVersion {
		return release.ComponentVersion{Name: name, Version: release.MustParseVersion(version), Type: release.TypeInline, Handler: name, Dependencies: deps}
	}
	rel := func(v, etcd, k8s string) release.Release {
		return release.Release{Version: release.MustParseVersion(v), Components: []release.ComponentRef{
			{Name: "etcd", Version: release.MustParseVersion(etcd)},
			{Name: "control-plane", Version: release.MustParseVersion(k8s)},
		}}
	}
	catalog, err := release.NewCatalog(
		[]release.Release{rel("v1.0", "v3.5.0", "v1.33.0"), rel("v1.1", "v3.6.0", "v1.34.0")},
		[]release.ComponentVersion{
			comp("etcd", "v3.5.0"), comp("etcd", "v3.6.0"),
			comp("control-plane", "v1.33.0", "etcd"), comp("control-plane", "v1.34.0", "etcd"),
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
	apiserverDown := true
	upgrade := runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		fmt.Printf("upgrade %s, attempt %d\n", t.Component, t.Attempt)
		if t.Component == "control-plane" && apiserverDown {
			return errors.New("apiserver not ready")
		}
		return nil
	})
	e := runner.New(upgrade)
	status, err := e.Execute(context.Background(), plan, nil)
	fmt.Println(status.Phase, status.Code, errors.Is(err, runner.ErrRunFailed))

	apiserverDown = false
	status, err = e.Execute(context.Background(), plan, status)
	fmt.Println(status.Phase, err, "runs:", status.Runs)
	// Output:
	// upgrade etcd, attempt 1
	// upgrade control-plane, attempt 1
	// Failed COMPONENT_FAILED true
	// upgrade control-plane, attempt 2
	// Succeeded <nil> runs: 2
}
