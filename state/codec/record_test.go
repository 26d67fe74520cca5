package codec_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state/codec"
)

func status(n int) *record.Status {
	t0 := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	s := &record.Status{Phase: record.Running, From: "v1.0", To: "v1.1", Runs: 1, StartedAt: t0}
	h := record.HopStatus{From: "v1.0", To: "v1.1", Phase: record.Running}
	for i := range n {
		h.Components = append(h.Components, record.ComponentStatus{Name: fmt.Sprintf("c%03d", i), ToVersion: "v1.1.0", Phase: record.Pending})
	}
	s.Hops = []record.HopStatus{h}
	return s
}

// A snapshot and commits, split at a size limit, replay to the status.
func TestReplay(t *testing.T) {
	s := status(100)
	var log []byte
	snap, err := codec.Snapshot(1, 7, s, 2000)
	require.NoError(t, err)
	require.Greater(t, len(snap), 3, "shards at a 2000-byte limit")
	base := codec.BaseOf(s)
	var refs []record.Ref
	for i := 10; i < 60; i++ {
		s.Hops[0].Components[i].Phase, s.Hops[0].Components[i].Attempts = record.Running, 1
		refs = append(refs, record.Ref{Hop: 0, Component: i})
	}
	lines, _, err := codec.Commits(2, 8, s, refs, 3000, base)
	require.NoError(t, err)
	require.Greater(t, len(lines), 1, "a commit split at a 3000-byte limit")
	for _, l := range lines {
		assert.LessOrEqual(t, len(l), 3000+len(lines[0])/2, "a line far over the limit")
		log = append(log, l...)
	}
	st := &codec.State{}
	for _, l := range snap {
		r, err := codec.Unframe(l)
		require.NoError(t, err)
		require.NoError(t, st.Apply(r))
	}
	ls, torn := codec.Lines(log)
	assert.Zero(t, torn)
	for _, l := range ls {
		r, err := codec.Unframe(l.Data)
		require.NoError(t, err)
		require.NoError(t, st.Apply(r))
	}
	require.NoError(t, st.Check())
	assert.Equal(t, s, st.Status)
	assert.Equal(t, uint64(1+len(lines)), st.Seq)
	assert.Equal(t, uint64(8), st.Token)
}

func TestLinesTorn(t *testing.T) {
	lines, _, err := codec.Commits(1, 1, status(3), []record.Ref{{Hop: 0, Component: 1}}, 0, codec.Base{})
	require.NoError(t, err)
	full := lines[0]
	for cut := range len(full) {
		ls, torn := codec.Lines(append(bytes.Clone(full), full[:cut]...))
		assert.Len(t, ls, 1, "cut at %d", cut)
		assert.Equal(t, cut, torn, "torn bytes with the second line cut at %d", cut)
	}
}

func TestUnframeRejects(t *testing.T) {
	lines, _, err := codec.Commits(1, 1, status(1), nil, 0, codec.Base{})
	require.NoError(t, err)
	good := lines[0]
	for name, b := range map[string][]byte{
		"empty":        nil,
		"no checksum":  []byte(`{"kind":"commit"}`),
		"bad checksum": append([]byte("00000000"), good[8:]...),
		"flipped byte": append(append(bytes.Clone(good[:20]), good[20]^1), good[21:]...),
		"unknown kind": frame(t, `{"kind":"other"}`),
	} {
		_, err := codec.Unframe(b)
		assert.Error(t, err, name)
	}
}

// frame frames an arbitrary body with a valid checksum.
func frame(t *testing.T, body string) []byte {
	t.Helper()
	b, err := codec.FrameBytes([]byte(body))
	require.NoError(t, err)
	return b
}

// Unframe never panics, and whatever it accepts frames back to the same
// record.
func FuzzUnframe(f *testing.F) {
	lines, _, _ := codec.Commits(1, 1, status(2), []record.Ref{{Hop: 0, Component: 1}}, 0, codec.Base{})
	f.Add(lines[0])
	full, _ := codec.FullCommits(1, 1, status(2), []record.Ref{{Hop: 0, Component: 1}}, 0)
	f.Add(full[0])
	f.Add([]byte("00000000 {}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := codec.Unframe(b)
		if err != nil {
			return
		}
		again, err := codec.Frame(r)
		require.NoError(t, err)
		r2, err := codec.Unframe(again)
		require.NoError(t, err)
		assert.Equal(t, r, r2)
	})
}
