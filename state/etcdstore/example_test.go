package etcdstore_test

import (
	"context"
	"fmt"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/etcdstore"
)

// A coordinator on one of several machines takes the run's lock in etcd
// and keeps it while it works. (Not run: it needs an etcd server.)
func Example() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cli.Close()
	store := etcdstore.New(cli, "/hopdag/prod/")

	host, _ := os.Hostname()
	lease, err := store.Acquire(ctx, fmt.Sprintf("%s/%d", host, os.Getpid()), 15*time.Second)
	if err != nil {
		fmt.Println(err) // a *state.LockedError names the holder
		return
	}
	runCtx, keeper := state.Keep(ctx, store, lease)
	defer keeper.Stop()
	prev, err := store.Load(runCtx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("resuming:", prev != nil)
	// ... runner.New(r, runner.WithCheckpointer(state.Checkpointer(store, lease))).Execute(runCtx, plan, prev)
	keeper.Stop()
	fmt.Println(store.Release(ctx, keeper.Lease()))
}
