// Command etcd is the etcd server, built from the Go module proxy for the
// etcd store's tests (see ../env.sh). It is etcd's own main: go install
// of go.etcd.io/etcd/v3 fails on that module's replace directives, so this
// module requires the server and client modules at one version instead.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
