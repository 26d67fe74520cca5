package state_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
)

// readOnlyDir makes dir and its files read-only for this process until
// the test ends: modes 0555 and 0444 when the test does not run as root,
// a read-only bind mount of dir over itself when it does (root writes
// whatever the modes say). It skips the test, saying why, when it can do
// neither.
func readOnlyDir(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			return os.Chmod(p, 0o444)
		}))
		require.NoError(t, os.Chmod(dir, 0o555))
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		cannot(t, "running as root, and a read-only bind mount of %s is not allowed here (%v): nothing to test", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		cannot(t, "running as root, and remounting %s read-only is not allowed here (%v): nothing to test", dir, err)
	}
}

// contents is every file of dir and its bytes.
func contents(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}

// OpenFileReadOnly reads what a File wrote (the status, and the lease as
// File.ReadLease says it) from a directory it cannot write, with or
// without its lease record or its "lock" file, writes nothing there, and
// refuses every write with ErrReadOnly.
func TestOpenFileReadOnly(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		acquire  bool     // a lease was acquired and the status saved
		release  bool     // and released
		remove   []string // files removed before
		wantHeld bool
	}{
		{name: "empty directory"},
		{name: "held", acquire: true, wantHeld: true},
		{name: "released", acquire: true, release: true},
		{name: "lease record missing", acquire: true, remove: []string{state.LeaseFile}, wantHeld: true},
		{name: "lease record and lock file missing", acquire: true, remove: []string{state.LeaseFile, "lock"}, wantHeld: true},
		{name: "lock file missing", acquire: true, remove: []string{"lock"}, wantHeld: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f, err := state.OpenFile(dir)
			require.NoError(t, err)
			var saved *record.Status
			if tc.acquire {
				l, err := f.Acquire(ctx, "node-a/1 (run)", time.Hour)
				require.NoError(t, err)
				saved = &record.Status{Phase: record.Failed, From: "v1", To: "v2", Runs: 1, Hops: []record.HopStatus{{From: "v1", To: "v2", Phase: record.Failed}}}
				require.NoError(t, f.Save(ctx, l.Token, saved))
				if tc.release {
					require.NoError(t, f.Release(ctx, l))
				}
			}
			wantLease, wantHeld, err := f.ReadLease(ctx)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			for _, name := range tc.remove {
				require.NoError(t, os.Remove(filepath.Join(dir, name)))
			}
			if len(tc.remove) > 0 {
				// What a File says of the directory as it is now.
				g, err := state.OpenFile(dir)
				require.NoError(t, err)
				wantLease, wantHeld, err = g.ReadLease(ctx)
				require.NoError(t, err)
				require.NoError(t, g.Close())
				for _, name := range tc.remove {
					os.Remove(filepath.Join(dir, name)) // OpenFile made "lock" again
				}
			}
			require.Equal(t, tc.wantHeld, wantHeld, "File.ReadLease's held (the case's premise)")
			before := contents(t, dir)
			readOnlyDir(t, dir)

			r, err := state.OpenFileReadOnly(dir)
			require.NoError(t, err)
			defer r.Close()
			st, err := r.Load(ctx)
			require.NoError(t, err)
			if saved == nil {
				assert.Nil(t, st, "Load of an empty directory")
			} else if assert.NotNil(t, st, "Load") {
				assert.Equal(t, saved.Phase, st.Phase, "Load: the phase saved")
				assert.Equal(t, saved.Runs, st.Runs, "Load: the runs saved")
			}
			l, held, err := r.ReadLease(ctx)
			require.NoError(t, err)
			assert.Equal(t, wantHeld, held, "ReadLease's held, as File.ReadLease says")
			assert.Equal(t, wantLease.Token, l.Token, "ReadLease's token, as File.ReadLease says")
			assert.Equal(t, wantLease.Holder, l.Holder, "ReadLease's holder, as File.ReadLease says")

			for what, err := range map[string]error{
				"Save":    r.Save(ctx, l.Token, &record.Status{}),
				"Commit":  r.Commit(ctx, l.Token, &record.Status{}, nil),
				"Release": r.Release(ctx, l),
			} {
				assert.ErrorIs(t, err, state.ErrReadOnly, "%s", what)
				assert.ErrorContains(t, err, dir, "%s names the directory", what)
			}
			_, err = r.Acquire(ctx, "x", time.Minute)
			assert.ErrorIs(t, err, state.ErrReadOnly, "Acquire")
			_, err = r.Refresh(ctx, l)
			assert.ErrorIs(t, err, state.ErrReadOnly, "Refresh")
			assert.Equal(t, before, contents(t, dir), "nothing in %s changed", dir)
		})
	}
}

// A directory that is not there is not made: OpenFileReadOnly's error
// matches fs.ErrNotExist.
func TestOpenFileReadOnlyMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	_, err := state.OpenFileReadOnly(dir)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, serr := os.Stat(dir)
	assert.ErrorIs(t, serr, fs.ErrNotExist, "%s was not made", dir)
}
