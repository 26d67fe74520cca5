package dag

import (
	"encoding/json"

	"github.com/hopdag/hopdag/release"
)

// jsonGraph is the JSON form of a Graph.
type jsonGraph struct {
	From         string                 `json:"from,omitempty"`
	To           string                 `json:"to,omitempty"`
	Nodes        []jsonNode             `json:"nodes"`
	Batches      [][]string             `json:"batches"`
	CriticalPath jsonPath               `json:"criticalPath"`
	Removed      []release.ComponentRef `json:"removed,omitempty"`
}

type jsonNode struct {
	Name             string           `json:"name"`
	From             string           `json:"from,omitempty"`
	To               string           `json:"to,omitempty"`
	Type             string           `json:"type,omitempty"`
	Deps             []string         `json:"deps"`
	Level            int              `json:"level"`
	ExpectedDuration release.Duration `json:"expectedDuration"`
	Critical         bool             `json:"critical,omitempty"`
}

type jsonPath struct {
	Nodes    []string         `json:"nodes"`
	Duration release.Duration `json:"duration"`
}

// MarshalJSON writes the graph as data: the releases, each node (name,
// versions, type, dependencies, level, expected duration, whether it is on
// the critical path) in index order, the batches by name, the critical path
// and the removed components. Durations are Go duration strings ("5m0s").
func (g *Graph) MarshalJSON() ([]byte, error) {
	path, crit := g.criticalNames()
	critN, _, _ := g.critical()
	out := jsonGraph{
		Nodes:        make([]jsonNode, len(g.nodes)),
		Batches:      make([][]string, len(g.levels)),
		CriticalPath: jsonPath{Nodes: path, Duration: release.D(crit)},
		Removed:      g.removed,
	}
	if g.from != nil {
		out.From = g.from.Version.Original()
	}
	if g.to != nil {
		out.To = g.to.Version.Original()
	}
	for i := range g.nodes {
		nd := &g.nodes[i]
		jn := jsonNode{Name: nd.Name, Deps: nd.Deps, Level: g.level[i], ExpectedDuration: release.D(nd.Duration), Critical: critN[i]}
		if jn.Deps == nil {
			jn.Deps = []string{}
		}
		if nd.From != nil {
			jn.From = nd.From.Version.Original()
		}
		if nd.To != nil {
			jn.To = nd.To.Version.Original()
			jn.Type = nd.To.Type
		}
		out.Nodes[i] = jn
	}
	for l, batch := range g.levels {
		names := make([]string, len(batch))
		for k, v := range batch {
			names[k] = g.nodes[v].Name
		}
		out.Batches[l] = names
	}
	return json.Marshal(out)
}
