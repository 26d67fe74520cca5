package state_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

func TestFileConformance(t *testing.T) {
	statetest.Run(t, func(t *testing.T) statetest.Env {
		clock := runnertest.NewClock(epoch)
		dir := t.TempDir()
		return statetest.Env{
			Open: func() statetest.Backend {
				f, err := state.OpenFile(dir, state.WithClock(clock))
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, f.Close()) })
				return f
			},
			Expire:  expireOn(clock),
			Clock:   clock,
			Raw:     dirRaw{t, dir},
			Journal: state.JournalFile,
		}
	})
}

// dirRaw is a File store's directory as a statetest.Raw: the files that
// hold the status and the lock's state.
type dirRaw struct {
	t   *testing.T
	dir string
}

func (r dirRaw) Names() []string {
	var names []string
	for _, n := range []string{state.JournalFile, state.LeaseFile, state.SnapshotFile} {
		if _, err := os.Stat(filepath.Join(r.dir, n)); err == nil {
			names = append(names, n)
		}
	}
	return names
}

func (r dirRaw) Read(name string) []byte {
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(r.t, err)
	return b
}

func (r dirRaw) Write(name string, data []byte) {
	require.NoError(r.t, os.WriteFile(filepath.Join(r.dir, name), data, 0o644))
}

func (r dirRaw) Remove(name string) {
	require.NoError(r.t, os.Remove(filepath.Join(r.dir, name)))
}

func openFile(t *testing.T, dir string, opts ...state.Option) *state.File {
	t.Helper()
	f, err := state.OpenFile(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, f.Close()) })
	return f
}

func TestFileCorruptLease(t *testing.T) {
	for _, tc := range []struct {
		name, data, why string
		offset          int64 // of the bad byte
	}{
		{"torn", `{"last": 3, "tok`, "unexpected end of JSON input", 16},
		{"garbage at byte 0", `x{"last": 3}`, "invalid character 'x'", 0},
		{"garbage at byte 8", `{"last" 3}`, "invalid character '3'", 8},
		{"garbage after the record", `{"last": 3} x`, "after top-level value", 12},
		{"empty file", ``, "unexpected end of JSON input", 0},
		{"empty record", `{}`, "no token", 0},
		{"token above last", `{"last":2,"token":3,"holder":"a","ttl":1,"expires":"2026-09-01T10:00:00Z"}`, "token 3 is above the last token 2", 0},
		{"lease without holder", `{"last":3,"token":3,"ttl":1,"expires":"2026-09-01T10:00:00Z"}`, "lease 3 lacks a holder", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, state.LeaseFile)
			require.NoError(t, os.WriteFile(path, []byte(tc.data), 0o644))
			f := openFile(t, dir)
			lease := state.Lease{Holder: "a", Token: 3, TTL: time.Minute}
			_, acqErr := f.Acquire(t.Context(), "a", time.Minute)
			_, refErr := f.Refresh(t.Context(), lease)
			for op, err := range map[string]error{
				"Acquire": acqErr, "Refresh": refErr,
				"Save":    f.Save(t.Context(), 3, statetest.Sample(1)),
				"Release": f.Release(t.Context(), lease),
			} {
				require.ErrorIs(t, err, state.ErrCorrupt, op)
				assert.Contains(t, err.Error(), path, "%s: the error names the file", op)
				assert.Contains(t, err.Error(), tc.why, op)
				// Deleting lease.json is safe (the lock file and the status
				// keep the tokens): say so, with the command, not "restore
				// it from a backup or repair it by hand".
				assert.Contains(t, err.Error(), "delete it: rm "+path, "%s: the error says what to run", op)
				assert.NotContains(t, err.Error(), "backup", "%s: the error says what to run", op)
				if ce, ok := errors.AsType[*state.CorruptError](err); assert.True(t, ok, op) {
					assert.Equal(t, tc.offset, ce.Offset, "%s: CorruptError.Offset of %q", op, tc.data)
				}
			}
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.data, string(after), "a corrupt lease file was replaced")
			_, err = os.Stat(filepath.Join(dir, state.SnapshotFile))
			assert.ErrorIs(t, err, fs.ErrNotExist, "a status was saved under a corrupt lease file")
		})
	}
}

// A holder is dead only when its lease expired: not when its process
// died (here, its File was closed), nor when a file is missing.
func TestFileHolderDeadOnlyAtExpiry(t *testing.T) {
	clock := runnertest.NewClock(epoch)
	dir := t.TempDir()
	a, err := state.OpenFile(dir, state.WithClock(clock))
	require.NoError(t, err)
	la, err := a.Acquire(t.Context(), "a", time.Hour)
	require.NoError(t, err)
	require.NoError(t, a.Save(t.Context(), la.Token, statetest.Sample(1)))
	require.NoError(t, a.Close())

	b := openFile(t, dir, state.WithClock(clock))
	_, err = b.Acquire(t.Context(), "b", time.Hour)
	require.ErrorIs(t, err, state.ErrLocked, "a closed holder's unexpired lease")

	clock.Advance(time.Hour)
	err = b.Save(t.Context(), la.Token, statetest.Sample(2))
	require.ErrorIs(t, err, state.ErrFenced, "a write at the lease's expiry")
	// Nobody holds the lock now, but it is not free before the clock-skew
	// allowance has passed too.
	clock.Advance(state.Skew(time.Hour) - time.Nanosecond)
	_, err = b.Acquire(t.Context(), "b", time.Hour)
	require.ErrorIs(t, err, state.ErrLocked, "an acquisition within the clock-skew allowance after the expiry")
	clock.Advance(time.Nanosecond)
	lb, err := b.Acquire(t.Context(), "b", time.Hour)
	require.NoError(t, err, "the lease expired and the skew allowance passed")
	assert.Greater(t, lb.Token, la.Token)
	err = openFile(t, dir, state.WithClock(clock)).Save(t.Context(), la.Token, statetest.Sample(2))
	require.ErrorIs(t, err, state.ErrFenced)
}

// The directory holds the records, the mutex, the current holder's file
// and nothing else: no temporary files, no holder files of old leases.
func TestFileLeavesNoDebris(t *testing.T) {
	clock := runnertest.NewClock(epoch)
	dir := t.TempDir()
	a, b := openFile(t, dir, state.WithClock(clock)), openFile(t, dir, state.WithClock(clock))
	l, err := a.Acquire(t.Context(), "a", time.Minute)
	require.NoError(t, err)
	for i := range 4 {
		require.NoError(t, a.Save(t.Context(), l.Token, statetest.Sample(i)))
	}
	clock.Advance(time.Minute + state.Skew(time.Minute)) // a is paused past its lease
	l, err = b.Acquire(t.Context(), "b", time.Minute)
	require.NoError(t, err)
	require.NoError(t, b.Save(t.Context(), l.Token, statetest.Sample(3)))
	l, err = b.Refresh(t.Context(), l)
	require.NoError(t, err)

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"lock", "lease.lock", state.LeaseFile, state.SnapshotFile, state.JournalFile}, names,
		"files in the store's directory")

	require.NoError(t, b.Release(t.Context(), l))
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 5, "files after Release: %v", entries)
}

func TestFileClosed(t *testing.T) {
	f, err := state.OpenFile(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, f.Close(), "second Close")
	_, err = f.Acquire(t.Context(), "a", time.Minute)
	assert.ErrorContains(t, err, "store is closed")
}

// A missing snapshot is named as such, not as a gap in the journal.
func TestFileMissingSnapshot(t *testing.T) {
	dir := t.TempDir()
	f, err := state.OpenFile(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	l, err := f.Acquire(t.Context(), "a", time.Minute)
	require.NoError(t, err)
	s := statetest.Big(20)
	require.NoError(t, f.Commit(t.Context(), l.Token, s, nil))
	s.Hops[0].Components[0].Attempts++
	require.NoError(t, f.Commit(t.Context(), l.Token, s, []record.Ref{{Hop: 0, Component: 0}}))
	require.NoError(t, os.Remove(filepath.Join(dir, state.SnapshotFile)))
	g, err := state.OpenFile(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	_, err = g.Load(t.Context())
	var ce *state.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, filepath.Join(dir, state.SnapshotFile), ce.Path)
	assert.Contains(t, err.Error(), "it is not there, and the journal")
}

// TestFileLeaseRecordDeleted: deleting lease.json (the cure people reach
// for with stale locks) while its holder runs handed the live lease to the
// next Acquire at once. Now the lease is taken as held, by an unknown
// holder, for one TTL from when the record was found missing: a live
// holder's Refresh keeps it (its token is the status's last), and only
// once nobody refreshed does another holder get in, with a greater token.
func TestFileLeaseRecordDeleted(t *testing.T) {
	for _, alive := range []bool{true, false} {
		t.Run(map[bool]string{true: "holder alive", false: "holder dead"}[alive], func(t *testing.T) {
			ctx := context.Background()
			clock := runnertest.NewClock(epoch)
			dir := t.TempDir()
			open := func() *state.File {
				f, err := state.OpenFile(dir, state.WithClock(clock))
				require.NoError(t, err)
				t.Cleanup(func() { _ = f.Close() })
				return f
			}
			a, b := open(), open()
			la, err := a.Acquire(ctx, "a", time.Minute)
			require.NoError(t, err)
			s := statetest.Big(3)
			require.NoError(t, a.Commit(ctx, la.Token, s, nil))
			require.NoError(t, os.Remove(filepath.Join(dir, state.LeaseFile)))

			_, err = b.Acquire(ctx, "b", time.Minute)
			require.ErrorIs(t, err, state.ErrLocked, "Acquire right after lease.json was deleted")
			assert.ErrorContains(t, err, state.LeaseFile+" was missing")

			clock.Advance(40 * time.Second)
			if alive {
				la, err = a.Refresh(ctx, la)
				require.NoError(t, err, "the live holder's Refresh keeps its lease")
				require.NoError(t, a.Commit(ctx, la.Token, s, nil))
			}
			clock.Advance(40 * time.Second)
			lb, err := b.Acquire(ctx, "b", time.Minute)
			if alive {
				require.ErrorIs(t, err, state.ErrLocked, "the refreshed lease is still held")
				assert.ErrorContains(t, err, "locked by a ", "the holder is named again once it refreshed")
				return
			}
			require.NoError(t, err, "a TTL and the skew allowance after nobody refreshed")
			assert.Greater(t, lb.Token, la.Token)
			assert.ErrorIs(t, a.Commit(ctx, la.Token, s, nil), state.ErrFenced)
		})
	}
}

// TestFileDirectoryReplaced removes the store's directory while a holder
// runs (rm -rf, which starts tokens over) and a new coordinator starts
// there: the old handle, whose token is issued again, is fenced, and
// writes nothing over the new holder's status.
func TestFileDirectoryReplaced(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state")
	a, err := state.OpenFile(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	la, err := a.Acquire(ctx, "a", time.Minute)
	require.NoError(t, err)
	require.NoError(t, a.Commit(ctx, la.Token, statetest.Big(3), nil))

	require.NoError(t, os.RemoveAll(dir))
	b, err := state.OpenFile(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	lb, err := b.Acquire(ctx, "b", time.Minute)
	require.NoError(t, err)
	require.Equal(t, la.Token, lb.Token, "the test needs the token issued again")
	require.NoError(t, b.Save(ctx, lb.Token, statetest.Big(2)))

	s := statetest.Big(3)
	s.Hops[0].Components[0].Phase = record.Succeeded
	for name, call := range map[string]func() error{
		"Save":    func() error { return a.Save(ctx, la.Token, s) },
		"Commit":  func() error { return a.Commit(ctx, la.Token, s, []record.Ref{{Hop: 0, Component: 0}}) },
		"Refresh": func() error { _, err := a.Refresh(ctx, la); return err },
		"Release": func() error { return a.Release(ctx, la) },
		"Acquire": func() error { _, err := a.Acquire(ctx, "a", time.Minute); return err },
	} {
		err := call()
		require.ErrorIs(t, err, state.ErrFenced, name)
		assert.ErrorContains(t, err, "was removed or replaced since this handle opened it", name)
	}
	got, err := b.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, statetest.Big(2), got, "the new holder's status stands")
}

// TestFileLockFileDeleted deletes the directory's "lock" file (the file
// the handles flock) while a holder runs: the holder goes on, flocking the
// one there now, and another handle still finds the lease held.
func TestFileLockFileDeleted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := state.OpenFile(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	la, err := a.Acquire(ctx, "a", time.Minute)
	require.NoError(t, err)
	s := statetest.Big(3)
	require.NoError(t, a.Commit(ctx, la.Token, s, nil))

	require.NoError(t, os.Remove(filepath.Join(dir, "lock")))
	b, err := state.OpenFile(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	_, err = b.Acquire(ctx, "b", time.Minute)
	require.ErrorIs(t, err, state.ErrLocked, "the lease is held whatever became of the lock file")

	s.Hops[0].Components[0].Phase = record.Succeeded
	require.NoError(t, a.Commit(ctx, la.Token, s, []record.Ref{{Hop: 0, Component: 0}}), "the holder goes on")
	la, err = a.Refresh(ctx, la)
	require.NoError(t, err)
	got, err := b.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, s, got)
	require.NoError(t, a.Release(ctx, la))
	lb, err := b.Acquire(ctx, "b", time.Minute)
	require.NoError(t, err)
	assert.Greater(t, lb.Token, la.Token, "tokens go on from the lease and the status")
}
