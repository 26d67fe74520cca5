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
