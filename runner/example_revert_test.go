package runner_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// printUndo is a runner that upgrades and rolls back by printing.
type printUndo struct{}

func (printUndo) Run(_ context.Context, t runner.Task) error {
	fmt.Printf("upgrade %s to %s\n", t.Component, t.To.Version)
	return nil
}

func (printUndo) Rollback(_ context.Context, t runner.Task) error {
	fmt.Printf("roll back %s to %s\n", t.Component, t.From.Version)
	return nil
}

// An upgrade that succeeded, rolled back on request through its DAG:
// dependents first, to the release it started from.
func ExampleRevert() {
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
	e := runner.New(printUndo{})
	status, err := e.Execute(context.Background(), plan, nil)
	fmt.Println(status.Phase, err)

	if err := runner.Revert(status, "canary alerts", time.Now()); err != nil {
		fmt.Println(err)
		return
	}
	status, err = e.Execute(context.Background(), plan, status)
	fmt.Println(status.Phase, errors.Is(err, runner.ErrRolledBack))
	fmt.Println(status.Message)
	// Output:
	// upgrade etcd to v3.6.0
	// upgrade control-plane to v1.34.0
	// Succeeded <nil>
	// roll back control-plane to v1.33.0
	// roll back etcd to v3.5.0
	// RolledBack true
	// rolled back after: rollback requested: canary alerts
}
