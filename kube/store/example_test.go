package store_test

import (
	"context"
	"fmt"
	"strings"
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
	s, err := store.New(c, "upgrades", "cluster-run")
	if err != nil {
		panic(err) // a name that is not a DNS-1123 label
	}
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

// New refuses a name that cannot go where the store puts it: the label
// hopdag.io/store of its objects takes at most 63 characters.
func ExampleNew() {
	_, err := store.New(nil, "upgrades", "hopdag-"+strings.Repeat("a-very-long-cluster-version-name", 2))
	fmt.Println(err)
	// Output:
	// store: name "hopdag-a-very-long-cluster-version-namea-very-long-cluster-version-name" cannot name a store (must be no more than 63 bytes): it is the value of the label hopdag.io/store on the store's objects and starts their names; give a shorter name, or a hash of a long one
}
