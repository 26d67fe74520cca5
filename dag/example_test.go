package dag_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/release"
)

// The graph of one hop, batch by batch. etcd, containerd, coredns and
// metrics-server do not change between rc.2 and rc.3; kubernetes-master
// still waits for bkeagent, which it reaches through etcd and containerd.
func ExampleBuild() {
	c, err := release.LoadDir("../testdata/catalog")
	if err != nil {
		panic(err)
	}
	from, _ := c.Release(release.MustParseVersion("v26.06-rc.2"))
	to, _ := c.Release(release.MustParseVersion("v26.06-rc.3"))
	g, err := dag.Build(c, from, to)
	if err != nil {
		panic(err)
	}
	for i, batch := range g.Levels() {
		var names []string
		for _, v := range batch {
			n := g.Node(v)
			names = append(names, n.Name+" "+n.From.Version.Original()+"->"+n.To.Version.Original())
		}
		fmt.Printf("batch %d: %s\n", i+1, strings.Join(names, ", "))
	}
	// Output:
	// batch 1: pre-upgrade-resources v1.1.0->v1.1.1
	// batch 2: bkeagent v1.4.0->v1.4.1, provider v1.4.0-rc.2->v1.4.0-rc.3
	// batch 3: kubernetes-master v1.33.2->v1.33.3
	// batch 4: calico v3.29.3->v3.29.4, kube-proxy v1.33.2->v1.33.3, kubernetes-worker v1.33.2->v1.33.3
}

// The critical path is the longest chain by expected duration: no schedule,
// however parallel, finishes the hop sooner.
func ExampleGraph_CriticalPath() {
	c, err := release.LoadDir("../testdata/catalog")
	if err != nil {
		panic(err)
	}
	from, _ := c.Release(release.MustParseVersion("v26.03"))
	to, _ := c.Release(release.MustParseVersion("v26.06"))
	g, err := dag.Build(c, from, to)
	if err != nil {
		panic(err)
	}
	path, length := g.CriticalPath()
	for _, v := range path {
		fmt.Printf("%-22s %v\n", g.Node(v).Name, g.Node(v).Duration)
	}
	fmt.Println("at least", length)
	// Output:
	// pre-upgrade-resources  20s
	// bkeagent               1m0s
	// etcd                   3m0s
	// kubernetes-master      5m0s
	// kubernetes-worker      4m0s
	// at least 13m20s
}

// Mermaid draws the batches as subgraphs and the critical path in red;
// edges implied by others are left out.
func ExampleGraph_Mermaid() {
	g, err := dag.New([]dag.Node{
		{Name: "etcd", Duration: 3 * time.Minute},
		{Name: "apiserver", Deps: []string{"etcd"}, Duration: 2 * time.Minute},
		{Name: "scheduler", Deps: []string{"apiserver", "etcd"}, Duration: time.Minute},
		{Name: "dns", Deps: []string{"apiserver"}, Duration: 30 * time.Second},
	})
	if err != nil {
		panic(err)
	}
	fmt.Print(g.Mermaid())
	// Output:
	// ---
	// title: "4 components in 3 batches, critical path 6m0s"
	// ---
	// flowchart LR
	//   subgraph batch1 ["batch 1"]
	//     direction TB
	//     n2["etcd<br/>3m0s"]
	//   end
	//   subgraph batch2 ["batch 2"]
	//     direction TB
	//     n0["apiserver<br/>2m0s"]
	//   end
	//   subgraph batch3 ["batch 3"]
	//     direction TB
	//     n1["dns<br/>30s"]
	//     n3["scheduler<br/>1m0s"]
	//   end
	//   n0 --> n1
	//   n0 --> n3
	//   n2 --> n0
	//   classDef critical stroke:#d62728,stroke-width:3px
	//   class n0,n2,n3 critical
	//   linkStyle 1,2 stroke:#d62728,stroke-width:3px
}

// Every cycle is reported at once, each from its smallest name.
func ExampleCycleError() {
	_, err := dag.New([]dag.Node{
		{Name: "c", Deps: []string{"a"}},
		{Name: "a", Deps: []string{"b"}},
		{Name: "b", Deps: []string{"c"}},
		{Name: "y", Deps: []string{"x"}},
		{Name: "x", Deps: []string{"y"}},
	})
	var ce *dag.CycleError
	fmt.Println(errors.As(err, &ce), errors.Is(err, dag.ErrCycle))
	fmt.Println(err)
	// Output:
	// true true
	// dag: 2 cycles: a -> b -> c -> a; x -> y -> x
}
