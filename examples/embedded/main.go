// Command embedded is the smallest program that embeds hopdag: it plans
// v26.06-rc.2 -> v26.06 on the embedded sample catalog, prints the plan
// and runs it durably with a Go function as the runner of every
// component: the status lives in the directory upgrade-state, so a run
// killed part way resumes, when started again, without re-running what
// succeeded.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/hopdag/hopdag"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

func main() {
	catalog, err := release.Load(hopdag.SampleCatalog()) // or release.LoadDir("my-catalog")
	if err != nil {
		log.Fatal(err)
	}
	upgrade := runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		t.Logger.Info("upgrading") // do the work here, and stop when ctx is done
		fmt.Printf("hop %s: %s -> %s\n", t.Hop.Name(), t.Component, t.To.Version)
		return nil
	})
	healthy := func(ctx context.Context, c runner.CheckTask) error { return nil }
	exec := runner.New(upgrade, runner.WithMaxParallel(4), runner.WithFailurePolicy(runner.FailFast),
		runner.WithCheck("cluster-healthy", healthy), runner.WithCheck("nodes-ready", healthy))

	// A version is the state of a one-track system ("v26.06"); across
	// tracks a state names each ("platform=27.03.0,kubernetes=v1.34.1").
	from, to := path.MustParseState("v26.06-rc.2"), path.MustParseState("v26.06")
	plan, err := runner.NewPlan(catalog, from, to, runner.ForExecutor(exec))
	if err != nil {
		log.Fatal(err) // no route, a cycle, a check nothing runs: all known before running
	}
	fmt.Print(plan)
	store, err := state.OpenFile("upgrade-state")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	// Lock, keep the lease, resume, save every transition, release.
	status, err := state.Run(context.Background(), store, store, exec, plan)
	if status == nil {
		log.Fatal(err) // locked by another run, a damaged store: nothing ran
	}
	fmt.Println(status.Phase, err)
}
