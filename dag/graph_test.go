package dag

import (
	"github.com/hopdag/hopdag/internal/cputime"

	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func deps(pairs ...string) []Node {
	// "a:b,c" means a depends on b and c.
	var nodes []Node
	for _, p := range pairs {
		name, list, _ := strings.Cut(p, ":")
		nd := Node{Name: name}
		if list != "" {
			nd.Deps = strings.Split(list, ",")
		}
		nodes = append(nodes, nd)
	}
	return nodes
}

func TestNew(t *testing.T) {
	g, err := New(deps("d:b,c,b", "b:a", "c:a", "a:", "e:"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, g.Names())
	assert.Equal(t, [][]string{{"a", "e"}, {"b", "c"}, {"d"}}, batches(g))
	d, _ := g.Index("d")
	assert.Equal(t, []string{"b", "c"}, g.Node(d).Deps, "sorted, repeats dropped")
	assert.Equal(t, []int{1, 2}, g.Deps(d))
	assert.Equal(t, []int{1, 2}, g.Dependents(0))
	assert.Equal(t, []int{0, 1, 2}, g.Ancestors(d))
	assert.Equal(t, []int{1, 2, 3}, g.Descendants(0))
	assert.Empty(t, g.Descendants(d))
	assert.Equal(t, 4, g.NumEdges())
	_, ok := g.Index("zz")
	assert.False(t, ok)
	path, length := g.CriticalPath()
	assert.Equal(t, []string{"a", "b", "d"}, names(g, path), "longest chain when durations are zero; ties to smaller indexes")
	assert.Zero(t, length)
}

func TestNewDoesNotAliasInput(t *testing.T) {
	in := deps("b:a", "a:")
	g, err := New(in)
	require.NoError(t, err)
	in[0].Deps[0] = "changed"
	in[0].Name = "changed"
	assert.Equal(t, []string{"a"}, g.Node(1).Deps)
	assert.Equal(t, "b", g.Node(1).Name)
}

func TestNewEmpty(t *testing.T) {
	g, err := New(nil)
	require.NoError(t, err)
	assert.Zero(t, g.Len())
	assert.Empty(t, g.Levels())
	path, d := g.CriticalPath()
	assert.Nil(t, path)
	assert.Zero(t, d)
	assert.Contains(t, g.DOT(), "digraph")
	assert.Contains(t, g.Mermaid(), "flowchart")
	b, err := json.Marshal(g)
	require.NoError(t, err)
	assert.JSONEq(t, `{"nodes":[],"batches":[],"criticalPath":{"nodes":[],"duration":"0s"}}`, string(b))
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name  string
		nodes []Node
		is    []error
		msg   string
	}{
		{"missing", deps("a:b"), []error{ErrMissingDependency}, "dag: a depends on b, which is not in the graph"},
		{"self", deps("a:a"), []error{ErrSelfDependency}, "dag: a depends on itself"},
		{"duplicate", deps("a:", "a:"), []error{ErrDuplicateNode}, "dag: node a is listed twice"},
		{"empty name", deps("a:", ":"), []error{ErrDuplicateNode}, "dag: a node has no name"},
		{"two node cycle", deps("b:a", "a:b"), []error{ErrCycle}, "dag: 1 cycle: a -> b -> a"},
		{
			"all cycles, sorted, rotated to the smallest name",
			deps("y:x", "c:a", "x:y", "b:c", "a:b", "ok:a,x"),
			[]error{ErrCycle}, "dag: 2 cycles: a -> b -> c -> a; x -> y -> x",
		},
		{
			"rotation: the cycle is entered at its smallest name",
			deps("m:z", "z:q", "q:m"),
			[]error{ErrCycle}, "dag: 1 cycle: m -> z -> q -> m",
		},
		{
			"overlapping cycles make one walk over the component",
			deps("a:b,c", "b:a", "c:a"),
			[]error{ErrCycle}, "dag: 1 cycle: a -> b -> a -> c -> a",
		},
		{
			"everything at once",
			deps("a:b,zz", "b:a", "s:s", "t:"),
			[]error{ErrCycle, ErrMissingDependency, ErrSelfDependency},
			"dag: a depends on zz, which is not in the graph\ndag: s depends on itself\ndag: 1 cycle: a -> b -> a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := New(tt.nodes)
			assert.Nil(t, g)
			require.Error(t, err)
			for _, target := range tt.is {
				assert.ErrorIs(t, err, target)
			}
			assert.EqualError(t, err, tt.msg)
		})
	}
}

func TestCycleErrorIsDeterministic(t *testing.T) {
	nodes := deps("a:b", "b:c", "c:a", "d:e", "e:d", "f:g", "g:h", "h:f,g")
	var first string
	for i := 0; i < 20; i++ {
		shuffled := append([]Node(nil), nodes...)
		for j := range shuffled {
			k := (j*7 + i) % len(shuffled)
			shuffled[j], shuffled[k] = shuffled[k], shuffled[j]
		}
		_, err := New(shuffled)
		require.Error(t, err)
		if i == 0 {
			first = err.Error()
		}
		assert.Equal(t, first, err.Error())
	}
	assert.Equal(t, "dag: 3 cycles: a -> b -> c -> a; d -> e -> d; f -> g -> h -> f", first)
}

// A 50,000-node ring is one cycle; the recursion-free Tarjan and walk must
// report it whole, quickly, without blowing the stack.
func TestNewHugeCycle(t *testing.T) {
	const n = 50000
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i] = Node{Name: fmt.Sprintf("r%05d", i), Deps: []string{fmt.Sprintf("r%05d", (i+1)%n)}}
	}
	start := cputime.Self()
	_, err := New(nodes)
	var ce *CycleError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Cycles, 1)
	require.Len(t, ce.Cycles[0], n+1)
	assert.Equal(t, "r00000", ce.Cycles[0][0])
	assert.Equal(t, "r00001", ce.Cycles[0][1])
	assert.Equal(t, "r00000", ce.Cycles[0][n])
	assert.Less(t, cputime.Self()-start, 5*time.Second, "CPU time")
}

// One back edge in a 50,000-node layered graph folds much of it into one
// strongly connected component.
func TestNewLayeredBackEdge(t *testing.T) {
	nodes := layered(50000, 200, 7, false)
	first, last := nodes[0].Name, nodes[len(nodes)-1].Name
	nodes[0].Deps = append(nodes[0].Deps, last)
	start := cputime.Self()
	_, err := New(nodes)
	elapsed := cputime.Self() - start
	var ce *CycleError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Cycles, 1)
	c := ce.Cycles[0]
	assert.Equal(t, first, c[0])
	assert.Equal(t, first, c[len(c)-1])
	t.Logf("SCC walk of %d steps in %v of CPU", len(c)-1, elapsed)
	assert.Less(t, elapsed, 10*time.Second, "CPU time")
}

func TestTransitiveReduction(t *testing.T) {
	g, err := New(deps("a:", "b:a", "c:a,b", "d:a,b,c", "e:a"))
	require.NoError(t, err)
	r := g.TransitiveReduction()
	got := map[string][]string{}
	for i := 0; i < r.Len(); i++ {
		got[r.Node(i).Name] = r.Node(i).Deps
	}
	assert.Equal(t, map[string][]string{"a": {}, "b": {"a"}, "c": {"b"}, "d": {"c"}, "e": {"a"}}, got)
	assert.Equal(t, batches(g), batches(r))
	// g is untouched.
	assert.Equal(t, []string{"a", "b", "c"}, g.Node(3).Deps)
}

func TestDependencyErrorUnwrap(t *testing.T) {
	err := error(&DependencyError{Component: "a", Dependency: "b", Err: ErrMissingDependency})
	assert.True(t, errors.Is(err, ErrMissingDependency))
	assert.False(t, errors.Is(err, ErrSelfDependency))
}

// A hub with 50,000 two-node cycles through it: the walk returns to the hub
// 50,000 times, and each return must not rescan the hub's list.
func TestNewHubCycle(t *testing.T) {
	const n = 50000
	nodes := make([]Node, n)
	nodes[0].Name = "a"
	for i := 1; i < n; i++ {
		nodes[i] = Node{Name: fmt.Sprintf("b%05d", i), Deps: []string{"a"}}
		nodes[0].Deps = append(nodes[0].Deps, nodes[i].Name)
	}
	start := cputime.Self()
	_, err := New(nodes)
	var ce *CycleError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Cycles, 1)
	assert.Len(t, ce.Cycles[0], 2*(n-1)+1)
	assert.Equal(t, []string{"a", "b00001", "a", "b00002", "a"}, ce.Cycles[0][:5])
	assert.Less(t, cputime.Self()-start, 5*time.Second, "CPU time")
}

// Thousands of repeats of one dependency cost a sort, not a quadratic
// insertion (the fuzzer found this).
func TestNewManyRepeatedDeps(t *testing.T) {
	nodes := deps("a:", "b:", "c:")
	for i := 0; i < 200000; i++ {
		nodes[2].Deps = append(nodes[2].Deps, []string{"a", "b"}[i%2])
	}
	start := cputime.Self()
	g, err := New(nodes)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, g.Node(2).Deps)
	assert.Less(t, cputime.Self()-start, 2*time.Second, "CPU time")
}
