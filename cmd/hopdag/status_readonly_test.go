package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
)

// makeReadOnly makes dir and its files read-only for this process until
// the test ends: as another user would find a root-owned directory
// (modes 0555 and 0444) when the test does not run as root; as root, a
// read-only bind mount of dir over itself (a read-only file system),
// since root writes whatever the modes say. It skips the test, saying
// why, when it can do neither.
func makeReadOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			return os.Chmod(p, 0o444)
		}))
		require.NoError(t, os.Chmod(dir, 0o555))
		t.Cleanup(func() {
			os.Chmod(dir, 0o755)
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					os.Chmod(p, 0o644)
				}
				return nil
			})
		})
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
	_, err := os.Create(filepath.Join(dir, "probe"))
	require.Error(t, err, "%s is read-only", dir)
}

// hopdag status only reads: it works on a state directory it cannot
// write (a read-only file system, or one owned by another user), whatever
// the status and the lock say, with or without the lock's "lock" file
// (a copy of the directory may lack it), and creates nothing there.
func TestStatusReadOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		phase  record.Phase
		lease  leaseState
		noLock bool // delete the "lock" file
		args   []string
		code   int
		stderr string // what stderr says, "" nothing
	}{
		{name: "succeeded", phase: record.Succeeded, lease: leaseReleased, code: exitOK},
		{name: "succeeded, json", phase: record.Succeeded, lease: leaseReleased, args: []string{"-o", "json"}, code: exitOK},
		{name: "succeeded, watch", phase: record.Succeeded, lease: leaseReleased, args: []string{"--watch", "--interval", "10ms"}, code: exitOK},
		{name: "running", phase: record.Running, lease: leaseHeld, code: exitRunning},
		{name: "running, coordinator gone", phase: record.Running, lease: leaseExpired, code: exitGone, stderr: "it died or was killed"},
		{name: "running, no lock file", phase: record.Running, lease: leaseHeld, noLock: true, code: exitRunning},
		{name: "failed, no lock file", phase: record.Failed, lease: leaseReleased, noLock: true, code: exitInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := savedWith(t, fixture(tc.phase), tc.lease)
			if tc.noLock {
				require.NoError(t, os.Remove(filepath.Join(dir, "lock")))
			}
			before, err := os.ReadDir(dir)
			require.NoError(t, err)
			makeReadOnly(t, dir)

			args := append([]string{"status", "--state", dir}, tc.args...)
			code, out, stderr := invoke(args...)
			assert.Equal(t, tc.code, code, "hopdag %v: exit status; stdout:\n%s\nstderr:\n%s", args, out, stderr)
			assert.Contains(t, out, string(tc.phase), "the status is printed")
			if tc.stderr == "" {
				assert.Empty(t, stderr)
			} else {
				assert.Contains(t, stderr, tc.stderr)
			}
			assert.NotContains(t, stderr, "read-only file system")
			assert.NotContains(t, stderr, "permission denied")
			after, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Equal(t, dirNames(before), dirNames(after), "files in %s", dir)
		})
	}
}

func dirNames(es []os.DirEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
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
