package state

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/hopdag/hopdag/internal/codec"
	"github.com/hopdag/hopdag/runner"
)

// Names of a journaled store's records (File: files in its directory;
// Memory: the same names in memory).
const (
	// SnapshotFile holds the last snapshot: a head line, then shard lines.
	SnapshotFile = "snapshot.log"
	// JournalFile holds the commits since the snapshot, one line each.
	JournalFile = "journal.log"
)

// Snapshot policy: a commit that rewrites more than half of the
// components, or one that would grow the journal past the larger of
// minJournal and the snapshot's size, writes a snapshot instead. The
// journal is then replayed in at most about the time the snapshot takes
// to read, and snapshots cost at most about as many bytes as the
// journal: the total stays linear in the run.
const minJournal = 1 << 20

// volume is where a journaled store keeps its records: named byte
// strings, replaced atomically or appended to.
type volume interface {
	// read returns the record, or an error matching fs.ErrNotExist.
	read(name string) ([]byte, error)
	// replace replaces the record atomically and durably.
	replace(name string, data []byte) error
	// appendAt cuts the record to off bytes (dropping a torn tail) and
	// appends data, durably.
	appendAt(name string, off int64, data []byte) error
	// stamp changes whenever another writer changed the records.
	stamp() (any, error)
	// where names the record in errors: a path.
	where(name string) string
}

// journal is the log of one store as a handle last saw it. Callers
// serialise access (File: the flock and its mutex; Memory: its mutex).
type journal struct {
	v     volume
	fresh bool
	at    any // v.stamp() after the last read or write
	// seq is the last commit's number, token the greatest token written.
	seq, token uint64
	end        int64 // the journal's length without a torn tail
	snapBytes  int64
	exists     bool // a status is stored
	counts     int  // components of the stored status
	// written counts the status bytes this handle wrote.
	written int64
}

// corrupt is a *CorruptError of record name at offset.
func (j *journal) corrupt(name string, off int64, err error) error {
	return &CorruptError{Path: j.v.where(name), Offset: off, Err: err}
}

// load reads the snapshot and replays the journal.
func (j *journal) load() (*codec.State, error) {
	st := &codec.State{}
	snap, err := j.v.read(SnapshotFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, errorf("read %s: %w", j.v.where(SnapshotFile), err)
	}
	var snapSeq uint64
	if err == nil {
		lines, torn := codec.Lines(snap)
		if torn > 0 {
			return nil, j.corrupt(SnapshotFile, int64(len(snap)-torn), errors.New("the snapshot ends in the middle of a line (it is replaced whole, so this is not a torn write)"))
		}
		want := 0
		for n, l := range lines {
			r, err := codec.Unframe(l.Data)
			if err == nil {
				switch {
				case n == 0 && r.Kind != codec.KindSnapshot:
					err = fmt.Errorf("the first record is a %s, want a snapshot head", r.Kind)
				case n > 0 && (r.Kind != codec.KindShard || r.Shard != n-1 || r.Seq != snapSeq):
					err = fmt.Errorf("record %d is a %s of seq %d, want shard %d of seq %d", n, r.Kind, r.Seq, n-1, snapSeq)
				}
			}
			if err == nil {
				if n == 0 {
					snapSeq, want = r.Seq, r.Shards
				}
				err = st.Apply(r)
			}
			if err != nil {
				return nil, j.corrupt(SnapshotFile, l.Offset, err)
			}
		}
		if len(lines) == 0 || len(lines)-1 != want {
			return nil, j.corrupt(SnapshotFile, int64(len(snap)), fmt.Errorf("the snapshot has %d shards, its head says %d", max(len(lines)-1, 0), want))
		}
		j.snapBytes = int64(len(snap))
	} else {
		j.snapBytes = 0
	}
	log, err := j.v.read(JournalFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, errorf("read %s: %w", j.v.where(JournalFile), err)
	}
	lines, torn := codec.Lines(log)
	// A last line without its newline is a write cut short by a crash:
	// never acknowledged, so dropped (and cut off by the next append).
	j.end = int64(len(log) - torn)
	for _, l := range lines {
		r, err := codec.Unframe(l.Data)
		if err == nil && r.Kind != codec.KindCommit {
			err = fmt.Errorf("a %s record in the journal", r.Kind)
		}
		if err == nil && r.Seq > st.Seq && r.Seq != st.Seq+1 {
			if st.Seq == 0 && j.snapBytes == 0 {
				// No snapshot, and the journal does not start at the first
				// commit: the snapshot that held the commits before it is gone.
				return nil, j.corrupt(SnapshotFile, 0, fmt.Errorf("it is not there, and the journal (%s) starts at commit %d: the commits before it were in the snapshot", j.v.where(JournalFile), r.Seq))
			}
			err = fmt.Errorf("commit %d follows %d: commits are missing", r.Seq, st.Seq)
		}
		if err == nil && r.Seq > st.Seq {
			err = st.Apply(r)
		}
		if err != nil {
			return nil, j.corrupt(JournalFile, l.Offset, err)
		}
		if r.Seq <= st.Seq {
			// Before the snapshot (a crash between the snapshot and the
			// journal's truncation): already in it.
			st.Token = max(st.Token, r.Token)
		}
	}
	if err := st.Check(); err != nil {
		return nil, j.corrupt(JournalFile, j.end, fmt.Errorf("the status the records add up to is not valid: %w", err))
	}
	j.seq, j.token, j.exists = st.Seq, st.Token, st.Status != nil
	j.counts = 0
	if st.Status != nil {
		for _, h := range st.Status.Hops {
			j.counts += len(h.Components)
		}
	}
	if j.at, err = j.v.stamp(); err != nil {
		return nil, errorf("stat %s: %w", j.v.where(JournalFile), err)
	}
	j.fresh = true
	return st, nil
}

// refresh makes sure the handle's view is the stored one.
func (j *journal) refresh() error {
	if j.fresh {
		now, err := j.v.stamp()
		if err != nil {
			return errorf("stat %s: %w", j.v.where(JournalFile), err)
		}
		if now == j.at {
			return nil
		}
	}
	_, err := j.load()
	return err
}

// lastToken is the greatest token any stored record was written under.
func (j *journal) lastToken() (uint64, error) {
	if err := j.refresh(); err != nil {
		return 0, err
	}
	return j.token, nil
}

// commit records s under token: a journal line for the changed
// components, or a snapshot (changed nil means all). The caller checked
// the lease; commit refuses a token below the last one written.
func (j *journal) commit(token uint64, s *runner.Status, changed []runner.Ref, all bool) (written int, err error) {
	if s == nil {
		return 0, errNilStatus
	}
	if err := j.refresh(); err != nil {
		return 0, err
	}
	if token < j.token {
		return 0, &FencedError{Token: token, Written: j.token}
	}
	total := 0
	for _, h := range s.Hops {
		total += len(h.Components)
	}
	defer func() {
		if err != nil {
			j.fresh = false // what is stored is unknown: read it again
		}
	}()
	if !all && j.exists && total == j.counts && 2*len(changed) <= total {
		lines, err := codec.Commits(j.seq+1, token, s, changed, 0)
		if err != nil {
			return 0, errorf("save: %w", err)
		}
		data := join(lines)
		if j.end+int64(len(data)) <= max(minJournal, j.snapBytes) {
			if err := j.v.appendAt(JournalFile, j.end, data); err != nil {
				return 0, errorf("save %s: %w", j.v.where(JournalFile), err)
			}
			j.end += int64(len(data))
			j.written += int64(len(data))
			j.seq += uint64(len(lines))
			j.token = token
			j.at, err = j.v.stamp()
			return len(data), err
		}
	}
	lines, err := codec.Snapshot(j.seq+1, token, s, 0)
	if err != nil {
		return 0, errorf("save: %w", err)
	}
	data := join(lines)
	if err := j.v.replace(SnapshotFile, data); err != nil {
		return 0, errorf("save %s: %w", j.v.where(SnapshotFile), err)
	}
	// The journal's commits are all in the snapshot now. (A crash before
	// the cut leaves them there; Load skips them by their seq.)
	if err := j.v.appendAt(JournalFile, 0, nil); err != nil {
		return 0, errorf("save %s: %w", j.v.where(JournalFile), err)
	}
	j.seq++
	j.written += int64(len(data))
	j.token, j.end, j.snapBytes, j.exists, j.counts = token, 0, int64(len(data)), true, total
	j.at, err = j.v.stamp()
	return len(data), err
}

func join(lines [][]byte) []byte {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	out := make([]byte, 0, n)
	for _, l := range lines {
		out = append(out, l...)
	}
	return out
}
