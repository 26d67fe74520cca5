package state_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

// run17 checkpoints a 17-component run to Succeeded in dir, one Commit
// per transition, as the audit's run did; last is Save (a snapshot, the
// journal left with no commit) or one more Commit. It returns the status.
func run17(t *testing.T, dir string, last string) *record.Status {
	t.Helper()
	f := openFile(t, dir)
	l, err := f.Acquire(t.Context(), "a", time.Minute)
	require.NoError(t, err)
	s := statetest.Big(17)
	require.NoError(t, f.Commit(t.Context(), l.Token, s, nil))
	for i := range s.Hops[0].Components {
		for _, p := range []record.Phase{record.Running, record.Succeeded} {
			s.Hops[0].Components[i].Phase = p
			if p == record.Succeeded {
				s.Progress.Done++
			}
			require.NoError(t, f.Commit(t.Context(), l.Token, s, []record.Ref{{Hop: 0, Component: i}}))
		}
	}
	s.Phase, s.Hops[0].Phase = record.Succeeded, record.Succeeded
	if last == "Save" {
		require.NoError(t, f.Save(t.Context(), l.Token, s))
	} else {
		require.NoError(t, f.Commit(t.Context(), l.Token, s, nil))
	}
	require.NoError(t, f.Release(t.Context(), l))
	return s
}

// TestFileJournalDeleted is the audit's case: journal.log deleted after
// a run finished. Load said Running, 0/17 (the first snapshot alone), and
// a resume re-ran all 17 components. Now Load fails, naming the missing
// file, the snapshot it belongs to, and the fix; right after a snapshot
// too, when the journal holds no commit.
func TestFileJournalDeleted(t *testing.T) {
	for _, last := range []string{"Commit", "Save"} {
		t.Run("after "+last, func(t *testing.T) {
			dir := t.TempDir()
			want := run17(t, dir, last)
			journal := filepath.Join(dir, state.JournalFile)
			saved, err := os.ReadFile(journal)
			require.NoError(t, err)
			require.NoError(t, os.Remove(journal))

			got, err := openFile(t, dir).Load(t.Context())
			assert.Nil(t, got, "Load with %s deleted", state.JournalFile)
			ce, ok := errors.AsType[*state.CorruptError](err)
			require.True(t, ok, "Load with %s deleted: %v, want a *state.CorruptError", state.JournalFile, err)
			assert.Equal(t, journal, ce.Path, "CorruptError.Path")
			for _, part := range []string{journal + " at byte 0 is corrupt: it is not there", filepath.Join(dir, state.SnapshotFile), "restore it from a backup"} {
				assert.Contains(t, err.Error(), part)
			}
			_, err = os.Stat(journal)
			assert.ErrorIs(t, err, fs.ErrNotExist, "Load recreated the deleted journal")

			require.NoError(t, os.WriteFile(journal, saved, 0o644))
			got, err = openFile(t, dir).Load(t.Context())
			require.NoError(t, err, "Load with the journal restored")
			assert.Equal(t, want, got, "Load with the journal restored")
		})
	}
}

// Stores written before journals had headers (testdata/v1-*, written by
// that code: one with commits in the journal, one right after a snapshot,
// its journal empty) load as they did; the next snapshot gives them a
// journal header, and from then on a deleted journal is an error.
func TestFileLegacyStore(t *testing.T) {
	for _, name := range []string{"v1-commits", "v1-snapshot"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("testdata", name))))
			want := legacyStatus(name)
			f := openFile(t, dir)
			got, err := f.Load(t.Context())
			require.NoError(t, err, "Load of a %s store", name)
			assert.Equal(t, want, got, "Load of a %s store", name)

			// Commits go on in the old journal; a snapshot starts a new
			// one. (The lease in testdata, token 1, never expires.)
			token := uint64(1)
			want.Runs++
			want.Hops[0].Message = "a hop's header changed"
			require.NoError(t, f.Commit(t.Context(), token, want, []record.Ref{{Hop: 0, Component: 0}}))
			requireLoad(t, dir, want)
			journal, err := os.ReadFile(filepath.Join(dir, state.JournalFile))
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSuffix(string(journal), "\n"), "\n")
			assert.Contains(t, lines[len(lines)-1], `"kind":"commit-delta"`, "a commit after the old ones is a delta commit")
			want.Runs++
			require.NoError(t, openFile(t, dir).Commit(t.Context(), token, want, []record.Ref{{Hop: 0, Component: 1}}), "a Commit by another handle")
			requireLoad(t, dir, want)
			want.Runs++
			require.NoError(t, f.Save(t.Context(), token, want))
			requireLoad(t, dir, want)
			head, err := os.ReadFile(filepath.Join(dir, state.JournalFile))
			require.NoError(t, err)
			assert.Contains(t, string(head), `{"journal":{"id":`, "the journal after a snapshot starts with its header")

			require.NoError(t, os.Remove(filepath.Join(dir, state.JournalFile)))
			_, err = openFile(t, dir).Load(t.Context())
			require.ErrorIs(t, err, state.ErrCorrupt, "Load with the journal deleted after the first snapshot with headers")
		})
	}
}

// legacyStatus is the status saved in testdata/name: Sample(0), its
// three components Succeeded one Commit each, then (v1-snapshot) the run
// Succeeded, in a Save.
func legacyStatus(name string) *record.Status {
	s := statetest.Sample(0)
	for i := range s.Hops[0].Components {
		s.Hops[0].Components[i].Phase, s.Hops[0].Components[i].Attempts = record.Succeeded, 1
		s.Progress.Done++
	}
	if name == "v1-snapshot" {
		s.Phase, s.Hops[0].Phase = record.Succeeded, record.Succeeded
	}
	return s
}

func requireLoad(t *testing.T, dir string, want *record.Status) {
	t.Helper()
	got, err := openFile(t, dir).Load(t.Context())
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// A crash while a snapshot is written leaves, besides the old or the new
// files, the new snapshot with the journal it replaced, or (on a store
// with no journal header yet) the header alone before the snapshot: each
// loads, with no error, as a status that was saved, and commits go on.
func TestFileSnapshotCrash(t *testing.T) {
	read := func(dir, name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return b
	}
	type files struct{ snapshot, journal []byte } // nil: none
	legacy := func(name string) []byte { return read(filepath.Join("testdata", name), state.SnapshotFile) }
	tests := []struct {
		name  string
		files func(t *testing.T) files
		want  *record.Status
	}{
		{"the new snapshot, the journal it replaced", func(t *testing.T) files {
			dir := t.TempDir()
			f := openFile(t, dir)
			l, err := f.Acquire(t.Context(), "a", time.Minute)
			require.NoError(t, err)
			s := statetest.Sample(0)
			require.NoError(t, f.Save(t.Context(), l.Token, s))
			require.NoError(t, f.Commit(t.Context(), l.Token, statetest.Sample(1), []record.Ref{{Hop: 0, Component: 0}}))
			old := read(dir, state.JournalFile)
			require.NoError(t, f.Save(t.Context(), l.Token, statetest.Sample(2)))
			return files{read(dir, state.SnapshotFile), old}
		}, statetest.Sample(2)},
		{"the new snapshot, the journal it replaced with no commit", func(t *testing.T) files {
			dir := t.TempDir()
			f := openFile(t, dir)
			l, err := f.Acquire(t.Context(), "a", time.Minute)
			require.NoError(t, err)
			require.NoError(t, f.Save(t.Context(), l.Token, statetest.Sample(1)))
			old := read(dir, state.JournalFile)
			require.NoError(t, f.Save(t.Context(), l.Token, statetest.Sample(2)))
			return files{read(dir, state.SnapshotFile), old}
		}, statetest.Sample(2)},
		{"a new store: the journal header, no snapshot yet", func(t *testing.T) files {
			return files{nil, state.JournalHeader("0123456789abcdef", 0, 1)}
		}, nil},
		{"an old store's snapshot, the journal header", func(t *testing.T) files {
			return files{legacy("v1-snapshot"), state.JournalHeader("0123456789abcdef", 4, 1)}
		}, legacyStatus("v1-snapshot")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crashed := tc.files(t)
			dir := t.TempDir()
			lease := []byte(`{"last": 5}`) // released; above the tokens written
			for name, data := range map[string][]byte{state.SnapshotFile: crashed.snapshot, state.JournalFile: crashed.journal, state.LeaseFile: lease} {
				if data != nil {
					require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
				}
			}
			f := openFile(t, dir)
			got, err := f.Load(t.Context())
			require.NoError(t, err, "Load after the crash")
			assert.Equal(t, tc.want, got, "Load after the crash")

			// The next holder goes on: a commit, then a snapshot.
			l, err := f.Acquire(t.Context(), "b", time.Minute)
			require.NoError(t, err)
			s := tc.want
			if s == nil {
				require.NoError(t, f.Commit(t.Context(), l.Token, statetest.Sample(0), nil))
				s = statetest.Sample(0)
			}
			s = s.DeepCopy()
			s.Runs++
			require.NoError(t, f.Commit(t.Context(), l.Token, s, []record.Ref{{Hop: 0, Component: 2}}))
			requireLoad(t, dir, s)
			journal := read(dir, state.JournalFile)
			if crashed.snapshot != nil && !bytes.HasPrefix(journal, crashed.journal) {
				// The commit started the snapshot's own journal.
				assert.Equal(t, 2, bytes.Count(journal, []byte("\n")), "the journal after the commit: %s", journal)
			}
			s.Runs++
			require.NoError(t, f.Save(t.Context(), l.Token, s))
			requireLoad(t, dir, s)
			require.NoError(t, os.Remove(filepath.Join(dir, state.JournalFile)))
			_, err = openFile(t, dir).Load(t.Context())
			require.ErrorIs(t, err, state.ErrCorrupt, "Load with the journal deleted")
		})
	}
}

// A commit's size does not grow with the number of hops: it carries the
// hops whose header changed. Before (every hop's header in every commit)
// one component's change cost about 2.5 KB at 17 hops, 26 KB at 200.
func TestCommitSizeFlat(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) statetest.Backend
	}{
		{"Memory", func(*testing.T) statetest.Backend { return state.NewMemory() }},
		{"File", func(t *testing.T) statetest.Backend { return openFile(t, t.TempDir()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			size := func(hops int, hopChanges bool) int64 {
				b := tc.open(t)
				l, err := b.Acquire(t.Context(), "a", time.Minute)
				require.NoError(t, err)
				s := statetest.Hops(hops)
				require.NoError(t, b.Save(t.Context(), l.Token, s))
				before := state.Written(b)
				s.Hops[hops-1].Components[0].Phase, s.Hops[hops-1].Components[0].Attempts = record.Running, 1
				if hopChanges {
					s.Hops[hops-1].Phase, s.CurrentHop = record.Running, hops-1
				}
				require.NoError(t, b.Commit(t.Context(), l.Token, s, []record.Ref{{Hop: hops - 1, Component: 0}}))
				got, err := b.Load(t.Context())
				require.NoError(t, err)
				require.Equal(t, s, got)
				return state.Written(b) - before
			}
			for _, hopChanges := range []bool{false, true} {
				small, large := size(17, hopChanges), size(200, hopChanges)
				t.Logf("a commit (its hop's header changed: %v): %d bytes at 17 hops, %d at 200", hopChanges, small, large)
				assert.InDelta(t, small, large, 16, "commit bytes at 17 hops and at 200 (the numbers of the hop, its versions, have more digits)")
				assert.Less(t, large, int64(1000), "commit bytes at 200 hops")
			}
		})
	}
}

// TestFileTruncatedJournalHaltsRun cuts journal.log short while a run is
// live, after components c00000 to c00003 succeeded: the run halts with
// CHECKPOINT_FAILED and a *CorruptError naming the journal, and the cut
// journal is left as it is. Before, the next commit took the cut for a
// torn append and wrote after it: the store showed c00001 to c00003
// Pending again, and a resume ran them again.
func TestFileTruncatedJournalHaltsRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  func(journal []byte) int
	}{
		{"at a line boundary", func(j []byte) int { return bytes.LastIndexByte(j[:len(j)-1], '\n') + 1 }},
		{"in an acknowledged line", func(j []byte) int { return bytes.LastIndexByte(j[:len(j)-1], '\n') - 10 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			journal := filepath.Join(dir, state.JournalFile)
			f := openFile(t, dir)
			l, err := f.Acquire(t.Context(), "a", time.Minute)
			require.NoError(t, err)
			var cut []byte
			r := runner.RunnerFunc(func(_ context.Context, task runner.Task) error {
				if task.Component != "c00004" {
					return nil
				}
				full, err := os.ReadFile(journal)
				if err != nil {
					return err
				}
				cut = full[:tc.cut(full)]
				return os.WriteFile(journal, cut, 0o644)
			})
			// 20 components in a chain (layers of one), one at a time.
			p := statetest.Layered(t, 20)
			st, err := runner.New(r, runner.WithMaxParallel(1), runner.WithCheckpointer(state.Checkpointer(f, l))).Execute(t.Context(), p, nil)
			require.Error(t, err, "Execute with %s cut short", state.JournalFile)
			ce, ok := errors.AsType[*state.CorruptError](err)
			require.True(t, ok, "Execute with %s cut short: %v, want a *state.CorruptError", state.JournalFile, err)
			assert.Equal(t, journal, ce.Path, "CorruptError.Path")
			assert.Equal(t, record.CodeCheckpointFailed, st.Code, "the run's code")
			got, err := os.ReadFile(journal)
			require.NoError(t, err)
			assert.Equal(t, cut, got, "%s after the run: something was written over the cut", state.JournalFile)
		})
	}
}
