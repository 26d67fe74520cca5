package state

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state/codec"
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
	// snapSeq and snapID are the snapshot's seq and the ID of the journal
	// it names ("" for a snapshot written before journals had IDs).
	snapSeq uint64
	snapID  string
	// jid is the ID in the journal's header, "" when it has none. follows
	// is set when the journal's records end at seq (a crash while a
	// snapshot is written must find it as it is), stale when it is the
	// journal a snapshot replaced (the next commit starts the snapshot's).
	jid            string
	follows, stale bool
	// written counts the status bytes this handle wrote.
	written int64
	// acked is how far this handle wrote the journal it last wrote and
	// was told it is durable: a journal of that ID shorter than that lost
	// acknowledged commits, which no crash can do (see checkAcked).
	acked ack
	// base is the hops as the last record read or written has them: what
	// the next commit records the changes of.
	base codec.Base
}

// ack is how far one handle wrote one journal: its ID, its end offset
// and the seq of its last commit.
type ack struct {
	id  string
	end int64
	seq uint64
}

// checkAcked returns a *CorruptError when the journal just read, of ID
// jid, ending at end with commit last, is the one this handle last wrote
// but shorter than what it wrote and was told is durable. Only a torn
// tail, an append never acknowledged, may be dropped: a journal cut
// shorter (truncated by hand, a file system that lost a write) lost
// commits a run went on from, and appending after the cut would hide it.
// Within one ID a journal only grows (a snapshot starts a new ID), and
// every writer reads all that was acknowledged before it appends.
func (j *journal) checkAcked(jid string, end int64, last uint64) error {
	a := j.acked
	if a.id == "" || jid != a.id || (end >= a.end && last >= a.seq) {
		return nil
	}
	return j.corrupt(JournalFile, end, fmt.Errorf("it ends at commit %d, but this handle wrote it up to byte %d (commit %d) and those commits were acknowledged: it was cut short since, and the commits after byte %d are lost from it", last, a.end, a.seq, end))
}

// journalRef ties a snapshot to its journal. A snapshot's head carries
// the ID of the journal that follows it, and the journal's first line
// (its header) the same ID, so that a journal that is missing, cut to
// nothing or another snapshot's is an error, not an older status.
type journalRef struct {
	// ID names one journal: random, new with every snapshot.
	ID string `json:"id"`
	// Replaces, in a snapshot's head, is the ID of the journal it
	// replaced ("" for one without a header): the one a crash between
	// the snapshot and its journal's header leaves, with commits up to
	// the snapshot's seq less one, all in the snapshot.
	Replaces string `json:"replaces,omitempty"`
}

// tagged is the journal field of a snapshot head or a journal header.
type tagged struct {
	Journal *journalRef `json:"journal"`
}

// refOf returns the journalRef of a line that Unframe accepted; nil when
// it has none.
func refOf(line []byte) (*journalRef, error) {
	var t tagged
	if err := json.Unmarshal(bytes.TrimSuffix(line, []byte("\n"))[9:], &t); err != nil {
		return nil, err
	}
	if t.Journal != nil && t.Journal.ID == "" {
		return nil, errors.New("a journal reference without an ID")
	}
	return t.Journal, nil
}

// withRef adds ref to a framed line (a JSON object) and frames it again.
func withRef(line []byte, ref journalRef) ([]byte, error) {
	tag, err := json.Marshal(tagged{&ref})
	if err != nil {
		return nil, err
	}
	body := bytes.TrimSuffix(line, []byte("\n"))[9:]
	// {"journal":{...}} and {"kind":...} make {"journal":{...},"kind":...}.
	return codec.FrameBytes(slices.Concat(tag[:len(tag)-1], []byte(","), body[1:]))
}

// header is the first line of a journal: a commit record of the seq the
// journal follows, without a status, carrying the journal's ID. (Readers
// that know no headers skip it, as a commit the snapshot holds.)
func header(id string, seq, token uint64) ([]byte, error) {
	line, err := codec.Frame(&codec.Record{Kind: codec.KindCommit, Seq: seq, Token: token})
	if err != nil {
		return nil, err
	}
	return withRef(line, journalRef{ID: id})
}

// newID returns a random journal ID.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// corrupt is a *CorruptError of record name at offset.
func (j *journal) corrupt(name string, off int64, err error) error {
	return &CorruptError{Path: j.v.where(name), Offset: off, Err: err}
}

// load reads the snapshot and replays the journal, in steps: read and
// verify the snapshot (readSnapshot), read the journal, dropping a torn
// tail, and its header (readJournal), check that the journal follows the
// snapshot (follow), replay its commits (replay), check where it ends
// (checkEnd), and keep what the handle needs for the next commit (adopt).
// Whatever is wrong is a *CorruptError naming the record and the offset.
func (j *journal) load() (*codec.State, error) {
	st := &codec.State{}
	snap, err := j.readSnapshot(st)
	if err != nil {
		return nil, err
	}
	j.snapBytes = snap.size
	log, err := j.readJournal()
	if err != nil {
		return nil, err
	}
	st.Token = max(st.Token, log.headToken)
	if err := j.follow(snap.ref, snap.seq, snap.exists, log.missing, log.size, log.lines, log.head, log.headSeq); err != nil {
		return nil, err
	}
	last, err := j.replay(st, log, snap.seq)
	if err != nil {
		return nil, err
	}
	if err := j.checkEnd(st, log, snap.seq, last); err != nil {
		return nil, err
	}
	j.adopt(st, snap, log, last)
	if j.at, err = j.v.stamp(); err != nil {
		return nil, errorf("stat %s: %w", j.v.where(JournalFile), err)
	}
	j.fresh = true
	return st, nil
}

// snapshotRead is what readSnapshot found.
type snapshotRead struct {
	exists bool
	size   int64
	// seq is the snapshot's commit, ref what it says follows it (nil when
	// there is no snapshot, or it was written before journals had IDs).
	seq uint64
	ref *journalRef
}

// readSnapshot reads the snapshot, if there is one, checks that it is a
// head followed by as many shards as the head says, and applies them to
// st. A snapshot is replaced whole, so any damage is corruption.
func (j *journal) readSnapshot(st *codec.State) (snapshotRead, error) {
	snap, err := j.v.read(SnapshotFile)
	if errors.Is(err, fs.ErrNotExist) {
		return snapshotRead{}, nil
	}
	if err != nil {
		return snapshotRead{}, errorf("read %s: %w", j.v.where(SnapshotFile), err)
	}
	sr := snapshotRead{exists: true, size: int64(len(snap))}
	lines, torn := codec.Lines(snap)
	if torn > 0 {
		return sr, j.corrupt(SnapshotFile, int64(len(snap)-torn), errors.New("the snapshot ends in the middle of a line (it is replaced whole, so this is not a torn write)"))
	}
	want := 0
	for n, l := range lines {
		r, err := codec.Unframe(l.Data)
		if err == nil {
			err = snapshotRecord(n, r, sr.seq)
		}
		if err == nil && n == 0 {
			sr.seq, want = r.Seq, r.Shards
			sr.ref, err = refOf(l.Data)
		}
		if err == nil {
			err = st.Apply(r)
		}
		if err != nil {
			return sr, j.corrupt(SnapshotFile, l.Offset, err)
		}
	}
	if len(lines) == 0 || len(lines)-1 != want {
		return sr, j.corrupt(SnapshotFile, int64(len(snap)), fmt.Errorf("the snapshot has %d shards, its head says %d", max(len(lines)-1, 0), want))
	}
	return sr, nil
}

// snapshotRecord checks that r, the snapshot's record n, is in its place:
// the head first, then shards 0, 1, ... of the head's seq.
func snapshotRecord(n int, r *codec.Record, seq uint64) error {
	switch {
	case n == 0 && r.Kind != codec.KindSnapshot:
		return fmt.Errorf("the first record is a %s, want a snapshot head", r.Kind)
	case n > 0 && (r.Kind != codec.KindShard || r.Shard != n-1 || r.Seq != seq):
		return fmt.Errorf("record %d is a %s of seq %d, want shard %d of seq %d", n, r.Kind, r.Seq, n-1, seq)
	}
	return nil
}

// journalRead is what readJournal found.
type journalRead struct {
	missing bool
	size    int // bytes, with a torn tail
	end     int64
	lines   []codec.Line
	// head is the header's reference (nil when the journal has none),
	// headSeq the commit it follows, headToken the token it was written
	// under.
	head               *journalRef
	headSeq, headToken uint64
}

// readJournal reads the journal and its header, and sets j.end to where
// its last whole line ends. A last line without its newline is a write
// cut short by a crash: never acknowledged, so dropped (and cut off by
// the next append).
func (j *journal) readJournal() (journalRead, error) {
	log, err := j.v.read(JournalFile)
	jr := journalRead{missing: errors.Is(err, fs.ErrNotExist), size: len(log)}
	if err != nil && !jr.missing {
		return jr, errorf("read %s: %w", j.v.where(JournalFile), err)
	}
	var torn int
	jr.lines, torn = codec.Lines(log)
	jr.end = int64(len(log) - torn)
	j.end = jr.end
	if len(jr.lines) == 0 {
		return jr, nil
	}
	// The header, if the journal has one: a commit without a status.
	r, err := codec.Unframe(jr.lines[0].Data)
	if err == nil && r.Kind == codec.KindCommit && r.Run == nil {
		if jr.head, err = refOf(jr.lines[0].Data); err == nil && jr.head == nil {
			err = errors.New("a commit without a status")
		}
		jr.headSeq, jr.headToken = r.Seq, r.Token
	}
	if err != nil {
		return jr, j.corrupt(JournalFile, 0, err)
	}
	return jr, nil
}

// replay applies the journal's commits after the snapshot's (of seq
// snapSeq) to st, and returns the seq of the journal's last record (the
// header's when it has no other).
func (j *journal) replay(st *codec.State, log journalRead, snapSeq uint64) (last uint64, err error) {
	last = log.headSeq
	for n, l := range log.lines {
		if n == 0 && log.head != nil {
			continue
		}
		r, err := codec.Unframe(l.Data)
		if err == nil {
			err = j.journalRecord(st, r, snapSeq)
			var snapshotGone *CorruptError
			if errors.As(err, &snapshotGone) {
				return 0, err // the snapshot's, not this record's
			}
		}
		if err == nil && r.Seq > st.Seq {
			err = st.Apply(r)
		}
		if err != nil {
			return 0, j.corrupt(JournalFile, l.Offset, err)
		}
		if r.Seq <= st.Seq {
			// Before the snapshot (a crash between the snapshot and the
			// journal's truncation): already in it.
			st.Token = max(st.Token, r.Token)
		}
		last = r.Seq
	}
	return last, nil
}

// journalRecord checks that r, a record of the journal after its header,
// is a commit with a status that may follow st. A gap right after no
// snapshot is a *CorruptError of the snapshot (it held the commits
// before); other errors are the record's.
func (j *journal) journalRecord(st *codec.State, r *codec.Record, snapSeq uint64) error {
	switch {
	case !r.IsCommit():
		return fmt.Errorf("a %s record in the journal", r.Kind)
	case r.Run == nil:
		return errors.New("a commit without a status")
	case j.stale && r.Seq >= snapSeq:
		return fmt.Errorf("it is the journal the snapshot (%s, commit %d) replaced, but holds commit %d", j.v.where(SnapshotFile), snapSeq, r.Seq)
	case r.Seq > st.Seq && r.Seq != st.Seq+1 && st.Seq == 0 && j.snapBytes == 0:
		// No snapshot, and the journal does not start at the first
		// commit: the snapshot that held the commits before it is gone.
		return j.corrupt(SnapshotFile, 0, fmt.Errorf("it is not there, and the journal (%s) starts at commit %d: the commits before it were in the snapshot", j.v.where(JournalFile), r.Seq))
	case r.Seq > st.Seq && r.Seq != st.Seq+1:
		return fmt.Errorf("commit %d follows %d: commits are missing", r.Seq, st.Seq)
	}
	return nil
}

// checkEnd checks where the journal, replayed into st up to commit last,
// ends: no shorter than this handle wrote and was told is durable, at the
// commit before the snapshot when it is the journal the snapshot
// replaced, and with a valid status.
func (j *journal) checkEnd(st *codec.State, log journalRead, snapSeq, last uint64) error {
	if log.head != nil {
		if err := j.checkAcked(log.head.ID, j.end, last); err != nil {
			return err
		}
	}
	if j.stale && last+1 != snapSeq {
		// The journal the snapshot replaced ended at the commit before it.
		return j.corrupt(JournalFile, j.end, fmt.Errorf("it is the journal the snapshot (%s, commit %d) replaced, but ends at commit %d, not %d: it is not the journal that follows the snapshot", j.v.where(SnapshotFile), snapSeq, last, snapSeq-1))
	}
	if err := st.Check(); err != nil {
		return j.corrupt(JournalFile, j.end, fmt.Errorf("the status the records add up to is not valid: %w", err))
	}
	return nil
}

// adopt keeps what the next commit needs of the state just loaded.
func (j *journal) adopt(st *codec.State, snap snapshotRead, log journalRead, last uint64) {
	j.seq, j.token, j.exists = st.Seq, st.Token, st.Status != nil
	j.base = codec.BaseOf(st.Status)
	j.snapSeq, j.snapID, j.jid = snap.seq, "", ""
	if snap.ref != nil {
		j.snapID = snap.ref.ID
	}
	if log.head != nil {
		j.jid = log.head.ID
	}
	j.follows = len(log.lines) > 0 && last == st.Seq && (log.head != nil || st.Seq > snap.seq)
	j.counts = 0
	if st.Status != nil {
		for _, h := range st.Status.Hops {
			j.counts += len(h.Components)
		}
	}
}

// follow checks that the journal follows the snapshot, given the
// snapshot's journalRef (nil when it has none, as before journals had
// IDs), the journal's size, lines and header (nil when it has none), and
// sets stale when the journal is the one the snapshot replaced.
func (j *journal) follow(ref *journalRef, snapSeq uint64, hasSnap, missing bool, size int, lines []codec.Line, head *journalRef, headSeq uint64) error {
	j.stale = false
	snapshot := j.v.where(SnapshotFile)
	switch {
	case ref == nil && head != nil && headSeq > snapSeq && !hasSnap:
		return j.corrupt(SnapshotFile, 0, fmt.Errorf("it is not there, and the journal (%s) follows the snapshot of commit %d", j.v.where(JournalFile), headSeq))
	case ref == nil && head != nil && headSeq > snapSeq:
		return j.corrupt(SnapshotFile, 0, fmt.Errorf("it is at commit %d, and the journal (%s) follows the snapshot of commit %d: it is an older snapshot", snapSeq, j.v.where(JournalFile), headSeq))
	case ref == nil:
		// No snapshot, or one written before journals had IDs: the
		// journal cannot be checked against it.
		return nil
	case missing:
		return j.corrupt(JournalFile, 0, fmt.Errorf("it is not there, and the snapshot (%s, commit %d) is followed by a journal: the commits since the snapshot were in it", snapshot, snapSeq))
	case len(lines) == 0:
		what := "it is empty"
		if size > 0 {
			what = fmt.Sprintf("it holds no whole line (%d bytes)", size)
		}
		return j.corrupt(JournalFile, 0, fmt.Errorf("%s, and the snapshot (%s, commit %d) is followed by a journal that starts with a header: it was cut short, and the commits since the snapshot were in it", what, snapshot, snapSeq))
	case head != nil && head.ID == ref.ID && headSeq != snapSeq:
		return j.corrupt(JournalFile, 0, fmt.Errorf("its header follows commit %d, and the snapshot (%s) is at commit %d", headSeq, snapshot, snapSeq))
	case head != nil && head.ID == ref.ID:
		return nil
	case head == nil && ref.Replaces == "" || head != nil && head.ID == ref.Replaces:
		// A crash after the snapshot, before its journal was started.
		j.stale = true
		return nil
	}
	what := "it has no header"
	if head != nil {
		what = fmt.Sprintf("its header names journal %s of commit %d", head.ID, headSeq)
	}
	return j.corrupt(JournalFile, 0, fmt.Errorf("it belongs to another snapshot: %s, and the snapshot (%s, commit %d) is followed by journal %s", what, snapshot, snapSeq, ref.ID))
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
func (j *journal) commit(token uint64, s *record.Status, changed []record.Ref, all bool) (written int, err error) {
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
		lines, next, err := codec.Commits(j.seq+1, token, s, changed, 0, j.base)
		if err != nil {
			return 0, saveError(err)
		}
		data := join(lines)
		base := j.end
		if j.stale {
			base = 0
		}
		if base+int64(len(data)) <= max(minJournal, j.snapBytes) {
			if j.stale {
				// The journal is the one the snapshot replaced (a crash
				// came between them): start the snapshot's own.
				var h []byte
				if h, err = header(j.snapID, j.snapSeq, token); err != nil {
					return 0, errorf("save: %w", err)
				}
				data = append(h, data...)
				err = j.v.replace(JournalFile, data)
				j.jid, j.stale = j.snapID, false
			} else {
				err = j.v.appendAt(JournalFile, j.end, data)
			}
			if err != nil {
				return 0, errorf("save %s: %w", j.v.where(JournalFile), err)
			}
			j.end = base + int64(len(data))
			j.written += int64(len(data))
			j.seq += uint64(len(lines))
			j.acked = ack{j.jid, j.end, j.seq}
			j.token = token
			j.base = next
			j.follows = true
			j.at, err = j.v.stamp()
			return len(data), err
		}
	}
	written, err = j.snapshot(token, s)
	if err != nil {
		return 0, err
	}
	j.counts = total
	return written, nil
}

// snapshot writes s whole under token, and starts its journal. A crash
// leaves the old snapshot and journal, or the new snapshot and the
// journal it replaced (see journalRef), or the new ones: never a
// snapshot without a journal that it names.
func (j *journal) snapshot(token uint64, s *record.Status) (int, error) {
	if !j.follows {
		// The journal holds nothing the status lacks (it is missing,
		// empty, or the one the snapshot replaced), but a crash in what
		// follows must find it as the new snapshot names it: give it a
		// header first.
		id := j.snapID
		if id == "" {
			id = newID()
		}
		h, err := header(id, j.seq, token)
		if err != nil {
			return 0, errorf("save: %w", err)
		}
		if err := j.v.replace(JournalFile, h); err != nil {
			return 0, errorf("save %s: %w", j.v.where(JournalFile), err)
		}
		j.jid, j.written = id, j.written+int64(len(h))
		j.acked = ack{id, int64(len(h)), j.seq}
	}
	id := newID()
	lines, err := codec.Snapshot(j.seq+1, token, s, 0)
	if err == nil {
		lines[0], err = withRef(lines[0], journalRef{ID: id, Replaces: j.jid})
	}
	if err != nil {
		return 0, saveError(err)
	}
	data := join(lines)
	if err := j.v.replace(SnapshotFile, data); err != nil {
		return 0, errorf("save %s: %w", j.v.where(SnapshotFile), err)
	}
	// The journal's commits are all in the snapshot now; its own journal
	// starts with its header. (A crash before leaves the old journal,
	// which Load takes as the one the snapshot replaced.)
	h, err := header(id, j.seq+1, token)
	if err != nil {
		return 0, errorf("save: %w", err)
	}
	if err := j.v.replace(JournalFile, h); err != nil {
		return 0, errorf("save %s: %w", j.v.where(JournalFile), err)
	}
	j.seq++
	j.written += int64(len(data) + len(h))
	j.token, j.end, j.snapBytes, j.exists = token, int64(len(h)), int64(len(data)), true
	j.snapSeq, j.snapID, j.jid, j.follows, j.stale = j.seq, id, id, true, false
	j.acked = ack{id, j.end, j.seq}
	j.base = codec.BaseOf(s)
	j.at, err = j.v.stamp()
	return len(data) + len(h), err
}

// saveError is the error of a status codec refused to encode: an
// invalid call (a status no Load could read back) or another failure.
func saveError(err error) error {
	if errors.Is(err, codec.ErrInvalid) {
		return fmt.Errorf("%w: save of %w; nothing was written", errInvalid, err)
	}
	return errorf("save: %w", err)
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
