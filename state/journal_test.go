package state

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
)

// crashVolume is records in a map whose writes stop at the crash'th: that
// write and every one after it fail and change nothing, as if the process
// died before it. (Each write is atomic here; a torn append is
// statetest's TornJournal.)
type crashVolume struct {
	files  map[string][]byte
	writes int
	crash  int // 0: never
}

var errCrash = errors.New("crashed")

func (v *crashVolume) where(name string) string { return "crash:" + name }

func (v *crashVolume) read(name string) ([]byte, error) {
	b, ok := v.files[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return b, nil
}

func (v *crashVolume) write() error {
	v.writes++
	if v.crash > 0 && v.writes >= v.crash {
		return errCrash
	}
	return nil
}

func (v *crashVolume) replace(name string, data []byte) error {
	if err := v.write(); err != nil {
		return err
	}
	v.files[name] = append([]byte(nil), data...)
	return nil
}

func (v *crashVolume) appendAt(name string, off int64, data []byte) error {
	if err := v.write(); err != nil {
		return err
	}
	b := v.files[name]
	if int64(len(b)) < off {
		return fmt.Errorf("%s is %d bytes, shorter than %d", name, len(b), off)
	}
	v.files[name] = append(append([]byte(nil), b[:off]...), data...)
	return nil
}

func (v *crashVolume) stamp() (any, error) { return v.writes, nil }

// crashStatus is a one-hop status of n components, the first done of
// them Succeeded, on its runs'th run.
func crashStatus(n, done, runs int) *record.Status {
	s := &record.Status{Phase: record.Running, From: "v1.0", To: "v1.1", Runs: runs}
	h := record.HopStatus{From: "v1.0", To: "v1.1", Phase: record.Running}
	for i := range n {
		c := record.ComponentStatus{Name: fmt.Sprintf("c%d", i), ToVersion: "v1.1.0", Phase: record.Pending}
		if i < done {
			c.Phase, c.Attempts = record.Succeeded, 1
		}
		h.Components = append(h.Components, c)
	}
	s.Hops = []record.HopStatus{h}
	s.Progress = record.Progress{Done: done, Total: n}
	return s
}

// op is one write of a run: a snapshot (all) or a commit of changed.
type op struct {
	all     bool
	s       *record.Status
	changed []record.Ref
}

// runOps runs ops on v until one fails with errCrash: last is the status
// the last acknowledged op wrote (from, when none was), inFlight the one
// the crash cut short (nil when none was).
func runOps(t *testing.T, v *crashVolume, token uint64, from *record.Status, ops []op) (last, inFlight *record.Status) {
	t.Helper()
	j := journal{v: v}
	_, err := j.load()
	require.NoError(t, err, "Load before the ops")
	last = from
	for _, o := range ops {
		if _, err := j.commit(token, o.s, o.changed, o.all); err != nil {
			require.ErrorIs(t, err, errCrash)
			return last, o.s
		}
		last = o.s
	}
	return last, nil
}

// requireCrashed loads v after a crash: with no error, the last status
// acknowledged or the one in flight.
func requireCrashed(t *testing.T, v *crashVolume, last, inFlight *record.Status) *record.Status {
	t.Helper()
	v.crash = 0
	st, err := (&journal{v: v}).load()
	require.NoError(t, err, "Load after the crash")
	if !assert.ObjectsAreEqual(last, st.Status) {
		require.Equal(t, inFlight, st.Status, "Load after the crash: want the last status acknowledged or the one in flight")
	}
	return st.Status
}

// recovery is what the next holder writes after a crash left got: a
// commit, a snapshot, a commit.
func recovery(got *record.Status) []op {
	a := crashStatus(4, 4, 3)
	if got != nil {
		a = got.DeepCopy()
		a.Runs = 3
	}
	a.Hops[0].Components[len(a.Hops[0].Components)-1].Reason = "after the crash"
	b := a.DeepCopy()
	b.Runs = 4
	c := b.DeepCopy()
	c.Hops[0].Components[0].Reason = "after the snapshot"
	return []op{
		{false, a, []record.Ref{{Hop: 0, Component: len(a.Hops[0].Components) - 1}}},
		{true, b, nil},
		{false, c, []record.Ref{{Hop: 0, Component: 0}}},
	}
}

// TestJournalCrashes crashes a run of snapshots and commits at each of
// its writes, on a new store and on stores written before journals had
// headers, and the next holder's writes after it at each of theirs: Load
// never fails and returns the last status a write acknowledged or the
// one being written; and once the next holder is done, the journal,
// deleted, is an error.
func TestJournalCrashes(t *testing.T) {
	legacy := func(name string) map[string][]byte {
		files := map[string][]byte{}
		for _, f := range []string{SnapshotFile, JournalFile} {
			b, err := os.ReadFile(filepath.Join("testdata", name, f))
			require.NoError(t, err)
			files[f] = b
		}
		return files
	}
	// The run: statuses of 4 components, one commit per component done,
	// a snapshot after every second.
	ops := []op{{true, crashStatus(4, 0, 1), nil}}
	for done := 1; done <= 4; done++ {
		ops = append(ops, op{false, crashStatus(4, done, 1), []record.Ref{{Hop: 0, Component: done - 1}}})
		if done%2 == 0 {
			ops = append(ops, op{true, crashStatus(4, done, 2), nil})
		}
	}
	for _, start := range []string{"new", "v1-commits", "v1-snapshot"} {
		initial := map[string][]byte{}
		if start != "new" {
			initial = legacy(start)
		}
		count := &crashVolume{files: maps.Clone(initial)}
		st, err := (&journal{v: count}).load()
		require.NoError(t, err, "Load of the %s store", start)
		from := st.Status
		last, _ := runOps(t, count, 1, from, ops)
		require.Equal(t, ops[len(ops)-1].s, last, "the run without a crash")
		for crash := 1; crash <= count.writes; crash++ {
			v := &crashVolume{files: maps.Clone(initial), crash: crash}
			last, inFlight := runOps(t, v, 1, from, ops)
			got := requireCrashed(t, v, last, inFlight)
			// The next holder's writes, without a crash and crashed at each.
			after := maps.Clone(v.files)
			count := &crashVolume{files: maps.Clone(after)}
			runOps(t, count, 2, got, recovery(got))
			for crash2 := 0; crash2 <= count.writes; crash2++ {
				t.Run(fmt.Sprintf("%s store, crash at write %d of %d, then at %d of %d", start, crash, v.writes, crash2, count.writes), func(t *testing.T) {
					v := &crashVolume{files: maps.Clone(after), crash: crash2}
					rec := recovery(got)
					last, inFlight := runOps(t, v, 2, got, rec)
					requireCrashed(t, v, last, inFlight)
					if crash2 == 0 {
						assert.Equal(t, rec[len(rec)-1].s, last, "the next holder's writes without a crash")
						delete(v.files, JournalFile)
						_, err := (&journal{v: v}).load()
						assert.ErrorIs(t, err, ErrCorrupt, "Load with the journal deleted")
					}
				})
			}
		}
	}
}
