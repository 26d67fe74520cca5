package store_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/store"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// A run's checkpoints on the API server: acquire the lock, keep it, and
// save under its token. (Not run: it needs an API server; see the tests.)
func Example() {
	var cfg *rest.Config // from ctrl.GetConfig(), a kubeconfig, envtest
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		panic(err)
	}
	s := store.New(c, "upgrades", "cluster-run")
	lease, err := s.Acquire(context.Background(), "operator-0", 15*time.Second)
	if err != nil {
		panic(err) // a *state.LockedError names the holder
	}
	ctx, keeper := state.Keep(context.Background(), s, lease)
	defer keeper.Stop()
	exec := runner.New(runner.RunnerFunc(func(context.Context, runner.Task) error { return nil }),
		runner.WithCheckpointer(state.Checkpointer(s, lease)))
	fmt.Println(exec != nil, ctx.Err())
}
