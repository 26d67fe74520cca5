package controlplane_test

import (
	"context"
	"fmt"
	"log"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hopdag/hopdag/kube/internal/controlplane"
)

// Start and Stop a control plane of 5 fake nodes outside a TestMain (a
// test package uses Main). The example has no output to check: it needs
// the binaries of tools/env.sh, so go test compiles it without running it.
func ExampleStart() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.WithNodes(5))
	if err != nil {
		log.Fatal(err) // matches controlplane.ErrMissing without the binaries
	}
	defer func() { _ = cp.Stop() }()
	fmt.Println(cp) // the API server, the nodes, how long each part took to start

	cs := kubernetes.NewForConfigOrDie(cp.Config())
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(nodes.Items), "nodes, named", cp.Nodes())
}
