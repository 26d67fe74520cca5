package runner

import (
	"cmp"
	"math/bits"
	"slices"
	"time"
)

// readySet holds the components ready to start and pops them in start
// order: longest remaining critical path (in the walk's direction)
// first, then by index (name order), so that the order is deterministic. That order is fixed for the
// hop, so each component gets its rank once, and the set is a bitmap over
// ranks with one summary bit per word: push and pop cost a few word
// operations where a heap would cost log n comparisons.
type readySet struct {
	rank    []int32 // component -> rank
	byRank  []int32 // rank -> component
	words   []uint64
	summary []uint64 // bit w: words[w] != 0
	n       int
}

// init ranks the components by prio, descending, then by index.
func (q *readySet) init(prio []time.Duration) {
	n := len(prio)
	q.rank, q.byRank = make([]int32, n), make([]int32, n)
	for i := range q.byRank {
		q.byRank[i] = int32(i)
	}
	if slices.ContainsFunc(prio, func(p time.Duration) bool { return p != prio[0] }) {
		slices.SortStableFunc(q.byRank, func(a, b int32) int { return cmp.Compare(prio[b], prio[a]) })
	}
	for r, i := range q.byRank {
		q.rank[i] = int32(r)
	}
	q.words = make([]uint64, (n+63)/64)
	q.summary = make([]uint64, (len(q.words)+63)/64)
}

func (q *readySet) Len() int { return q.n }

func (q *readySet) push(i int) {
	r := q.rank[i]
	w := r >> 6
	if q.words[w] == 0 {
		q.summary[w>>6] |= 1 << (w & 63)
	}
	q.words[w] |= 1 << (r & 63)
	q.n++
}

// pop removes and returns the first component in start order; the set
// must not be empty.
func (q *readySet) pop() int {
	for s, sw := range q.summary {
		if sw == 0 {
			continue
		}
		w := s<<6 + bits.TrailingZeros64(sw)
		b := bits.TrailingZeros64(q.words[w])
		q.words[w] &^= 1 << b
		if q.words[w] == 0 {
			q.summary[s] &^= 1 << (w & 63)
		}
		q.n--
		return int(q.byRank[w<<6+b])
	}
	panic("runner: pop of an empty ready set")
}
