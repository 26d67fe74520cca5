package state_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/stretchr/testify/require"

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
			Expire: expireOn(clock),
			Clock:  clock,
		}
	})
}

func openFile(t *testing.T, dir string, opts ...state.Option) *state.File {
	t.Helper()
	f, err := state.OpenFile(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, f.Close()) })
	return f
}

func TestFileCorruptStatus(t *testing.T) {
	good, err := json.Marshal(statetest.Sample(1))
	require.NoError(t, err)
	for _, tc := range []struct {
		name, data, why string
	}{
		{"empty", "", "empty record"},
		{"blank", " \n", "empty record"},
		{"torn", string(good[:len(good)/2]), "unexpected end of JSON input"},
		{"garbage", "\x00\x17\xff binary", "invalid character"},
		{"trailing bytes", string(good) + "}", "invalid character"},
		{"null", "null", `run phase "" is not a phase`},
		{"not a status", `{"kind":"ConfigMap"}`, `run phase "" is not a phase`},
		{"bad component phase", `{"phase":"Running","hops":[{"phase":"Running","components":[{"name":"etcd","phase":"Done"}]}]}`,
			`hop 1 component etcd phase "Done" is not a phase`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, state.StatusFile)
			require.NoError(t, os.WriteFile(path, []byte(tc.data), 0o644))
			_, err := openFile(t, dir).Load(t.Context())
			require.ErrorIs(t, err, state.ErrCorrupt)
			var ce *state.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, path, ce.Path, "CorruptError.Path")
			assert.Contains(t, err.Error(), path, "the error names the file")
			assert.Contains(t, err.Error(), tc.why)
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.data, string(after), "Load changed a corrupt file")
		})
	}
}

func TestFileCorruptLease(t *testing.T) {
	for _, tc := range []struct {
		name, data, why string
	}{
		{"torn", `{"last": 3, "tok`, "unexpected end of JSON input"},
		{"empty record", `{}`, "no token"},
		{"token above last", `{"last":2,"token":3,"holder":"a","ttl":1,"expires":"2026-09-01T10:00:00Z"}`, "token 3 is above the last token 2"},
		{"lease without holder", `{"last":3,"token":3,"ttl":1,"expires":"2026-09-01T10:00:00Z"}`, "lease 3 lacks a holder"},
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
			}
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.data, string(after), "a corrupt lease file was replaced")
			_, err = os.Stat(filepath.Join(dir, state.StatusFile))
			assert.ErrorIs(t, err, fs.ErrNotExist, "a status was saved under a corrupt lease file")
		})
	}
}

// A lease whose holder is gone (its process died; here, its File was
// closed) is taken over at once, without waiting for it to expire.
func TestFileTakeOverDeadHolder(t *testing.T) {
	clock := runnertest.NewClock(epoch)
	dir := t.TempDir()
	a, err := state.OpenFile(dir, state.WithClock(clock))
	require.NoError(t, err)
	la, err := a.Acquire(t.Context(), "a", time.Hour)
	require.NoError(t, err)
	require.NoError(t, a.Save(t.Context(), la.Token, statetest.Sample(1)))

	b := openFile(t, dir, state.WithClock(clock))
	_, err = b.Acquire(t.Context(), "b", time.Hour)
	require.ErrorIs(t, err, state.ErrLocked, "the holder is alive")

	require.NoError(t, a.Close())
	lb, err := b.Acquire(t.Context(), "b", time.Hour)
	require.NoError(t, err, "the holder is gone")
	assert.Greater(t, lb.Token, la.Token)

	// The dead holder's token is fenced, through any handle.
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
	clock.Advance(time.Minute) // a is paused past its lease
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
	holder := fmt.Sprintf("holder-%d.lock", l.Token)
	assert.ElementsMatch(t, []string{"lock", state.LeaseFile, state.StatusFile, holder}, names,
		"files in the store's directory")

	require.NoError(t, b.Release(t.Context(), l))
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 3, "files after Release: %v", entries)
}

func TestFileClosed(t *testing.T) {
	f, err := state.OpenFile(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, f.Close(), "second Close")
	_, err = f.Acquire(t.Context(), "a", time.Minute)
	assert.ErrorContains(t, err, "store is closed")
}
