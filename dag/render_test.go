package dag

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	hdag "github.com/heimdalr/dag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

func TestRenderLabels(t *testing.T) {
	c := loadCatalog(t)
	to := rel(t, c, "v26.06-rc.3")

	fresh, err := Build(c, nil, to)
	require.NoError(t, err)
	assert.Contains(t, fresh.DOT(), `label="-> v26.06-rc.3\n11 components in 6 batches`)
	assert.Contains(t, fresh.DOT(), `"etcd" [label="etcd\nv3.5.21 (new)\n3m0s"`)
	assert.Contains(t, fresh.Mermaid(), `title: "→ v26.06-rc.3: 11 components in 6 batches`)

	forced, err := Build(c, rel(t, c, "v26.06-rc.2"), to, IncludeUnchanged())
	require.NoError(t, err)
	assert.Contains(t, forced.DOT(), `"etcd" [label="etcd\nv3.5.21 (re-run)\n3m0s"`)
	assert.Contains(t, forced.Mermaid(), `n4["etcd<br/>v3.5.21 (re-run)<br/>3m0s"]`)

	// Removed components are named in the summary and the JSON.
	cvs := []release.ComponentVersion{comp("a", "v1.0.0"), comp("gone", "v1.0.0")}
	cat, from, to2 := catalogOf(t, cvs, []release.ComponentVersion{comp("a", "v1.1.0")})
	g, err := Build(cat, from, to2)
	require.NoError(t, err)
	assert.Contains(t, g.DOT(), `1 component in 1 batch, critical path 10s; removed: gone v1.0.0`)
	b, err := json.Marshal(g)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"removed":[{"name":"gone","version":"v1.0.0"}]`)
}

func TestRenderNodeWithoutVersions(t *testing.T) {
	cv := comp("a", "v1.0.0")
	g, err := New([]Node{{Name: "a", From: &cv}, {Name: "b"}})
	require.NoError(t, err)
	assert.Contains(t, g.DOT(), `"a" [label="a\nv1.0.0 ->"`)
	assert.Contains(t, g.DOT(), `"b" [label="b"`)
	b, err := json.Marshal(g)
	require.NoError(t, err)
	assert.JSONEq(t, `{"nodes":[{"name":"a","from":"v1.0.0","deps":[],"level":0,"expectedDuration":"0s","critical":true},`+
		`{"name":"b","deps":[],"level":0,"expectedDuration":"0s"}],"batches":[["a","b"]],`+
		`"criticalPath":{"nodes":["a"],"duration":"0s"}}`, string(b))
}

func TestHeimdalrInterop(t *testing.T) {
	_, err := ToHeimdalr(nil)
	require.Error(t, err)
	_, err = FromHeimdalr(nil)
	require.Error(t, err)

	// Values other than Node lend nothing; Node values lend their fields.
	// (A Node value needs a hash function: heimdalr hashes vertex values.)
	d := hdag.NewDAG()
	d.Options(hdag.Options{VertexHashFunc: func(v any) any { return fmt.Sprint(v) }})
	require.NoError(t, d.AddVertexByID("a", "anything"))
	require.NoError(t, d.AddVertexByID("b", Node{Name: "ignored", Duration: 5}))
	require.NoError(t, d.AddVertexByID("c", &Node{Duration: 7}))
	require.NoError(t, d.AddEdge("a", "b"))
	require.NoError(t, d.AddEdge("b", "c"))
	require.NoError(t, d.AddEdge("a", "c"))
	g, err := FromHeimdalr(d)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"a"}, {"b"}, {"c"}}, batches(g))
	assert.Equal(t, []string{"a", "b"}, g.Node(2).Deps)
	assert.EqualValues(t, 5, g.Node(1).Duration)
	assert.EqualValues(t, 7, g.Node(2).Duration)

	// From a hop: the vertices carry the component versions.
	c := loadCatalog(t)
	hop, err := Build(c, rel(t, c, "v26.06-rc.2"), rel(t, c, "v26.06-rc.3"))
	require.NoError(t, err)
	h, err := ToHeimdalr(hop)
	require.NoError(t, err)
	roots := h.GetRoots()
	assert.Len(t, roots, 1)
	assert.Contains(t, roots, "pre-upgrade-resources")
	v, err := h.GetVertex("kubernetes-master")
	require.NoError(t, err)
	assert.Equal(t, "v1.33.3", v.(*Node).To.Version.Original())
	v.(*Node).Name = "changed"
	km, _ := hop.Index("kubernetes-master")
	assert.Equal(t, "kubernetes-master", hop.Node(km).Name, "the vertex value is a copy")
	back, err := FromHeimdalr(h)
	require.NoError(t, err)
	assert.Equal(t, hop.DOT(), strings.Replace(back.DOT(), `label="`, `label="v26.06-rc.2 -> v26.06-rc.3\n`, 1))
}

// A Graph is read-only: concurrent queries are safe (run with -race).
func TestGraphConcurrentReads(t *testing.T) {
	c := loadCatalog(t)
	g, err := Build(c, rel(t, c, "v26.03"), rel(t, c, "v26.06"))
	require.NoError(t, err)
	want := g.DOT()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := 0; i < g.Len(); i++ {
				g.Ancestors(i)
				g.Descendants(i)
			}
			g.CriticalPath()
			if _, err := json.Marshal(g); err != nil {
				t.Error(err)
			}
			if got := g.DOT(); got != want {
				t.Errorf("DOT() changed under concurrent reads")
			}
			g.Mermaid()
		})
	}
	wg.Wait()
}
