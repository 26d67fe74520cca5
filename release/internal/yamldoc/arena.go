package yamldoc

import (
	"sync"

	"go.yaml.in/yaml/v3"
)

// nodeArena hands out the nodes and content slices of the documents the
// fast path parses. reset makes its memory available again: only once
// nothing points into the trees it built.
type nodeArena struct {
	nodes [][]yaml.Node
	ptrs  [][]*yaml.Node
	n, p  int // the chunk being filled, of nodes and of ptrs
}

const (
	arenaNodes = 2048
	arenaPtrs  = 8192
)

// arenas holds the node arenas of pieces already decoded.
var arenas = sync.Pool{New: func() any { return &nodeArena{} }}

// release resets a and gives it back to arenas, unless a piece of an
// unusual shape (one document of megabytes of tiny nodes) made it large.
func (a *nodeArena) release() {
	if len(a.nodes) > 64 {
		return
	}
	a.reset()
	arenas.Put(a)
}

func (a *nodeArena) reset() {
	a.n, a.p = 0, 0
	for _, c := range a.nodes {
		clear(c) // let go of the strings and slices the nodes held
	}
	for i := range a.nodes {
		a.nodes[i] = a.nodes[i][:0]
	}
	for i := range a.ptrs {
		a.ptrs[i] = a.ptrs[i][:0]
	}
}

func (a *nodeArena) node() *yaml.Node {
	for {
		if a.n == len(a.nodes) {
			a.nodes = append(a.nodes, make([]yaml.Node, 0, arenaNodes))
		}
		c := a.nodes[a.n]
		if len(c) < cap(c) {
			c = c[:len(c)+1]
			a.nodes[a.n] = c
			return &c[len(c)-1]
		}
		a.n++
	}
}

// content returns a copy of kids that the arena holds.
func (a *nodeArena) content(kids []*yaml.Node) []*yaml.Node {
	if len(kids) == 0 {
		return nil
	}
	if len(kids) > arenaPtrs/4 {
		return append([]*yaml.Node(nil), kids...)
	}
	for {
		if a.p == len(a.ptrs) {
			a.ptrs = append(a.ptrs, make([]*yaml.Node, 0, arenaPtrs))
		}
		c := a.ptrs[a.p]
		if len(c)+len(kids) <= cap(c) {
			start := len(c)
			c = append(c, kids...)
			a.ptrs[a.p] = c
			return c[start:len(c):len(c)]
		}
		a.p++
	}
}
