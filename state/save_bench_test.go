package state_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

// BenchmarkSave measures one checkpoint per backend (see
// statetest.BenchSave; etcd's is in package etcdstore). File's is
// dominated by its two fsyncs (the file, the directory).
func BenchmarkSave(b *testing.B) {
	b.Run("Memory", func(b *testing.B) { statetest.BenchSave(b, state.NewMemory()) })
	b.Run("File", func(b *testing.B) {
		f, err := state.OpenFile(b.TempDir())
		require.NoError(b, err)
		b.Cleanup(func() { f.Close() })
		statetest.BenchSave(b, f)
	})
}

// BenchmarkDurableRun is what a checkpointed run costs over the same run
// without a store (see statetest.BenchDurableRun), per backend:
//
//	go test -run '^$' -bench DurableRun -benchtime 3x ./state
//
// Target (2 cores): File at most 100 µs per component at n=10000, and
// flat from n=1000 to n=10000 (the total cost is linear).
func BenchmarkDurableRun(b *testing.B) {
	for _, be := range benchBackends() {
		b.Run(be.name, func(b *testing.B) { statetest.BenchDurableRun(b, be.run) })
	}
}

// benchBackends are the backends the run benchmarks measure: Memory, and
// File in a temporary directory.
func benchBackends() []struct {
	name string
	run  statetest.DurableRun
} {
	written := func(be statetest.Backend) int64 { return state.Written(be) }
	return []struct {
		name string
		run  statetest.DurableRun
	}{
		{"Memory", statetest.DurableRun{Open: func(*testing.B) statetest.Backend { return state.NewMemory() }, Written: written}},
		{"File", statetest.DurableRun{
			Open: func(b *testing.B) statetest.Backend {
				f, err := state.OpenFile(b.TempDir())
				require.NoError(b, err)
				b.Cleanup(func() { f.Close() })
				return f
			},
			Written: written,
		}},
	}
}

// BenchmarkChainRun is what the commits of a run of many hops cost (see
// statetest.BenchChainRun):
//
//	go test -run '^$' -bench ChainRun -benchtime 3x ./state
//
// A commit carries the hops whose header changed, not all of them: its
// size does not grow with the number of hops.
func BenchmarkChainRun(b *testing.B) {
	for _, be := range benchBackends() {
		b.Run(be.name, func(b *testing.B) { statetest.BenchChainRun(b, be.run) })
	}
}
