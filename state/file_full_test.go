//go:build linux

package state_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

// smallDisk mounts a tmpfs of size bytes on a temporary directory for
// the test, and skips the test, saying why, when it cannot (not root).
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		cannot(t, "needs root to mount a %d-byte tmpfs (CI runs as root)", size)
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		cannot(t, "mount a %d-byte tmpfs on %s: %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a file to dir that leaves free bytes free (to the block).
func fill(t *testing.T, dir string, free int64) {
	t.Helper()
	var fs syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &fs))
	avail := int64(fs.Bavail) * fs.Bsize
	require.Greater(t, avail, free, "free bytes on %s", dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "filler"), make([]byte, avail-free), 0o644))
}

// dotFiles lists the temporary files in dir.
func dotFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var tmp []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			tmp = append(tmp, e.Name())
		}
	}
	return tmp
}

// TestFileFullDisk fills a 256 KiB tmpfs and then saves a status that
// does not fit: the Save (a snapshot) and a Commit (an append) fail with
// "no space left on DIR", leave no temporary file and no partial append,
// the store loads as it was, and the lease is refreshed and released.
// Before, the failed snapshot's 20 KiB .snapshot.log.tmp held the space
// that was left, and Release (then every lease refresh) failed with
// ENOSPC until it was deleted by hand.
func TestFileFullDisk(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(f *state.File, token uint64, s *record.Status) error
	}{
		{"Save", func(f *state.File, token uint64, s *record.Status) error { return f.Save(t.Context(), token, s) }},
		{"Commit", func(f *state.File, token uint64, s *record.Status) error {
			var refs []record.Ref
			for i := range 40 {
				s.Hops[0].Components[i].Phase, s.Hops[0].Components[i].Reason = record.Running, strings.Repeat("x", 600)
				refs = append(refs, record.Ref{Hop: 0, Component: i})
			}
			return f.Commit(t.Context(), token, s, refs)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := smallDisk(t, 256<<10)
			f := openFile(t, dir)
			l, err := f.Acquire(t.Context(), "a", time.Minute)
			require.NoError(t, err)
			s := statetest.Big(100)
			require.NoError(t, f.Save(t.Context(), l.Token, s), "the first Save, on an empty disk")
			journal, err := os.ReadFile(filepath.Join(dir, state.JournalFile))
			require.NoError(t, err)
			fill(t, dir, 12<<10)

			big := s.DeepCopy()
			for i := range big.Hops[0].Components {
				big.Hops[0].Components[i].Reason = strings.Repeat("y", 400) // about 60 KiB in all
			}
			err = tc.write(f, l.Token, big)
			require.Error(t, err, "%s of a status larger than the space left", tc.name)
			assert.ErrorIs(t, err, syscall.ENOSPC)
			assert.Contains(t, err.Error(), "no space left on "+dir, "%s on a full disk", tc.name)
			assert.Empty(t, dotFiles(t, dir), "temporary files left in %s after the failed %s", dir, tc.name)
			after, err := os.ReadFile(filepath.Join(dir, state.JournalFile))
			require.NoError(t, err)
			assert.Equal(t, journal, after, "%s after the failed %s", state.JournalFile, tc.name)
			requireLoad(t, dir, s)

			l, err = f.Refresh(t.Context(), l)
			require.NoError(t, err, "Refresh after the failed %s", tc.name)
			require.NoError(t, f.Release(t.Context(), l), "Release after the failed %s", tc.name)
		})
	}
}

// cannot skips the test saying why it cannot run here; under CI=true,
// where it must run (CI runs as root and may mount), it fails.
func cannot(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}
