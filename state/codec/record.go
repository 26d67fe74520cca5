package codec

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/hopdag/hopdag/record"
)

// Kinds of record.
const (
	// KindCommit is one group commit of the journal: the run's header,
	// the header of every hop, and the component records that changed.
	// Commits written before delta commits are these; the journal's
	// header is one without a status.
	KindCommit = "commit"
	// KindDelta is one group commit of the journal: the run's header
	// without its hops, the hops whose header changed since the record
	// before (Changed), and the component records that changed. Its size
	// does not grow with the number of hops. (A reader that knows no
	// delta commits refuses the record: Unframe's kinds are closed.)
	KindDelta = "commit-delta"
	// KindSnapshot opens a snapshot: the header, and how many shards
	// follow.
	KindSnapshot = "snapshot"
	// KindShard is one shard of a snapshot: a run of component records.
	KindShard = "shard"
)

// Record is one stored record: a journal commit, a snapshot's head or one
// of its shards. It is a JSON object, so later fields (a component's
// upgrade phases, approvals) can be added without a new format: readers
// ignore fields they do not know, and ComponentStatus carries whatever
// the runner records.
type Record struct {
	Kind string `json:"kind"`
	// Seq numbers commits from 1; a snapshot has the Seq of the last
	// commit it contains, and its shards the same Seq.
	Seq uint64 `json:"seq"`
	// Token is the fencing token of the lease the record was written
	// under.
	Token uint64 `json:"token"`
	// Run is the status without its components (commit, snapshot), or
	// without its hops (delta commit).
	Run *record.Status `json:"run,omitempty"`
	// Counts is the number of components of each hop (commit, snapshot).
	Counts []int `json:"counts,omitempty"`
	// Hops is the number of hops of the run, and Changed the hops whose
	// header or component count changed since the record before, in
	// order (delta commit).
	Hops    int   `json:"hops,omitempty"`
	Changed []Hop `json:"changed,omitempty"`
	// Shards is how many shard records follow a snapshot head; Shard is a
	// shard's position among them, from 0.
	Shards int `json:"shards,omitempty"`
	Shard  int `json:"shard,omitempty"`
	// Components are component records (commit, shard).
	Components []Component `json:"components,omitempty"`
}

// Component is the record of one component of one hop.
type Component struct {
	Hop    int                    `json:"hop"`
	Index  int                    `json:"index"`
	Status record.ComponentStatus `json:"status"`
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Frame encodes r as one line: the CRC-32C of its JSON in hex, a space,
// the JSON, a newline. A line is readable with cat; jq reads it after
// cut -d' ' -f2-.
func Frame(r *Record) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return FrameBytes(b)
}

// FrameBytes frames an encoded record body (JSON without newlines).
func FrameBytes(b []byte) ([]byte, error) {
	if bytes.IndexByte(b, '\n') >= 0 {
		return nil, errors.New("a record body with a newline")
	}
	out := make([]byte, 0, len(b)+10)
	out = fmt.Appendf(out, "%08x ", crc32.Checksum(b, crcTable))
	out = append(out, b...)
	return append(out, '\n'), nil
}

// Unframe decodes one line written by Frame, with or without its newline.
func Unframe(line []byte) (*Record, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if len(line) < 10 || line[8] != ' ' {
		return nil, errors.New("not a record: no checksum")
	}
	var sum [4]byte
	if _, err := hex.Decode(sum[:], line[:8]); err != nil {
		return nil, errors.New("not a record: bad checksum field")
	}
	body := line[9:]
	want := uint32(sum[0])<<24 | uint32(sum[1])<<16 | uint32(sum[2])<<8 | uint32(sum[3])
	if got := crc32.Checksum(body, crcTable); got != want {
		return nil, fmt.Errorf("checksum %08x does not match the record's %08x", got, want)
	}
	r := new(Record)
	if err := json.Unmarshal(body, r); err != nil {
		return nil, err
	}
	switch r.Kind {
	case KindCommit, KindDelta, KindSnapshot, KindShard:
	default:
		return nil, fmt.Errorf("record kind %q is not a kind", r.Kind)
	}
	return r, nil
}

// header returns s without its components, and the component count per
// hop.
func header(s *record.Status) (*record.Status, []int) {
	h := *s
	h.Hops = make([]record.HopStatus, len(s.Hops))
	counts := make([]int, len(s.Hops))
	for i := range s.Hops {
		h.Hops[i] = s.Hops[i]
		h.Hops[i].Components = nil
		counts[i] = len(s.Hops[i].Components)
	}
	return &h, counts
}

// IsCommit reports whether r is a journal commit (or a journal's header,
// a commit without a status).
func (r *Record) IsCommit() bool { return r.Kind == KindCommit || r.Kind == KindDelta }

// Commits encodes the records of one group commit of s with the changed
// components, numbered from seq, as delta commits following base: one
// line, or several when the components would make a line longer than
// limit bytes (0: no limit). Each line carries the run's header; the
// first carries the hops whose header changed since base, so the lines
// must be applied in order, after the records base is of. next is the
// Base of s, which the writer keeps once the first line is stored.
func Commits(seq, token uint64, s *record.Status, changed []record.Ref, limit int, base Base) (lines [][]byte, next Base, err error) {
	if s == nil {
		return nil, Base{}, errors.New("nil status")
	}
	if err := validateHeaders(s); err != nil {
		return nil, Base{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	hops, next, err := diff(s, base)
	if err != nil {
		return nil, Base{}, err
	}
	if changed, err = reshaped(s, changed, base); err != nil {
		return nil, Base{}, err
	}
	run := *s
	run.Hops = nil
	r := &Record{Kind: KindDelta, Token: token, Run: &run, Hops: len(s.Hops), Changed: hops}
	lines, err = commits(seq, r, s, changed, limit)
	if err != nil {
		return nil, Base{}, err
	}
	return lines, next, nil
}

// reshaped returns changed with every component of the hops whose
// component count base does not know (a reader starts their components
// afresh: each must be in the commit), sorted by hop, then index; and an
// ErrInvalid error for a changed component outside s or one a reader
// would refuse.
func reshaped(s *record.Status, changed []record.Ref, base Base) ([]record.Ref, error) {
	var add []int // hops whose components all go in
	for i := range s.Hops {
		if !base.known || i >= len(base.hops) || base.hops[i].count != len(s.Hops[i].Components) {
			add = append(add, i)
		}
	}
	for _, ref := range changed {
		if ref.Hop < 0 || ref.Hop >= len(s.Hops) || ref.Component < 0 || ref.Component >= len(s.Hops[ref.Hop].Components) {
			return nil, fmt.Errorf("%w: changed component %d of hop %d is not in the status (%d hops)", ErrInvalid, ref.Component, ref.Hop, len(s.Hops))
		}
	}
	if len(add) > 0 {
		all := slices.Clone(changed)
		for _, h := range add {
			for i := range s.Hops[h].Components {
				all = append(all, record.Ref{Hop: h, Component: i})
			}
		}
		slices.SortFunc(all, func(a, b record.Ref) int {
			return cmp.Or(cmp.Compare(a.Hop, b.Hop), cmp.Compare(a.Component, b.Component))
		})
		changed = slices.Compact(all)
	}
	for _, ref := range changed {
		if err := validateComponent(ref.Hop, &s.Hops[ref.Hop].Components[ref.Component]); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	return changed, nil
}

// fullCommits encodes a group commit as commits carrying every hop's
// header, as hopdag wrote them before delta commits (for tests).
func fullCommits(seq, token uint64, s *record.Status, changed []record.Ref, limit int) ([][]byte, error) {
	if s == nil {
		return nil, errors.New("nil status")
	}
	run, counts := header(s)
	return commits(seq, &Record{Kind: KindCommit, Token: token, Run: run, Counts: counts}, s, changed, limit)
}

// commits encodes r with the changed components of s as lines numbered
// from seq, split at limit bytes. Only the first line keeps r.Changed.
func commits(seq uint64, r *Record, s *record.Status, changed []record.Ref, limit int) ([][]byte, error) {
	var lines [][]byte
	emit := func() error {
		r.Seq = seq + uint64(len(lines))
		b, err := Frame(r)
		if err != nil {
			return err
		}
		lines = append(lines, b)
		r.Components = r.Components[:0]
		r.Changed = nil
		return nil
	}
	size := 0
	for i := range r.Changed {
		size += hopSize(&r.Changed[i].Status)
	}
	for _, ref := range changed {
		if ref.Hop < 0 || ref.Hop >= len(s.Hops) || ref.Component < 0 || ref.Component >= len(s.Hops[ref.Hop].Components) {
			return nil, fmt.Errorf("changed component %d of hop %d is not in the status", ref.Component, ref.Hop)
		}
		c := Component{Hop: ref.Hop, Index: ref.Component, Status: s.Hops[ref.Hop].Components[ref.Component]}
		n := componentSize(&c)
		if limit > 0 && (len(r.Components) > 0 || len(r.Changed) > 0) && size+n > limit {
			if err := emit(); err != nil {
				return nil, err
			}
			size = 0
		}
		r.Components = append(r.Components, c)
		size += n
	}
	if err := emit(); err != nil {
		return nil, err
	}
	return lines, nil
}

// componentSize estimates the encoded size of c, from its strings.
func componentSize(c *Component) int {
	s := &c.Status
	return 200 + len(s.Name) + len(s.FromVersion) + len(s.ToVersion) + len(s.Reason) + 2*len(s.Error) + 2*len(s.Stack)
}

// hopSize estimates the encoded size of a hop's header, from its strings.
func hopSize(h *record.HopStatus) int {
	n := 300 + len(h.Track) + len(h.From) + len(h.To) + 2*len(h.Message)
	for _, c := range h.Checks {
		n += 80 + len(c.Name) + len(c.Stage) + 2*len(c.Error)
	}
	for _, w := range h.Warnings {
		n += 4 + 2*len(w)
	}
	return n
}

// Snapshot encodes s at seq as a head line and shard lines, each shard
// at most about limit bytes (0: one shard).
func Snapshot(seq, token uint64, s *record.Status, limit int) ([][]byte, error) {
	if s == nil {
		return nil, errors.New("nil status")
	}
	if err := validate(s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	run, counts := header(s)
	var shards []*Record
	cur := &Record{Kind: KindShard, Seq: seq, Token: token}
	size := 0
	for h := range s.Hops {
		for i := range s.Hops[h].Components {
			c := Component{Hop: h, Index: i, Status: s.Hops[h].Components[i]}
			n := componentSize(&c)
			if limit > 0 && len(cur.Components) > 0 && size+n > limit {
				shards = append(shards, cur)
				cur = &Record{Kind: KindShard, Seq: seq, Token: token, Shard: len(shards)}
				size = 0
			}
			cur.Components = append(cur.Components, c)
			size += n
		}
	}
	if len(cur.Components) > 0 {
		shards = append(shards, cur)
	}
	head := &Record{Kind: KindSnapshot, Seq: seq, Token: token, Run: run, Counts: counts, Shards: len(shards)}
	lines := make([][]byte, 0, 1+len(shards))
	for _, r := range append([]*Record{head}, shards...) {
		b, err := Frame(r)
		if err != nil {
			return nil, err
		}
		lines = append(lines, b)
	}
	return lines, nil
}

// Bounds on what a record may declare, so that a damaged record whose
// checksum still matches cannot make a reader allocate without limit.
// A real run is far below them (hopdag is measured at 10,000 components).
const (
	MaxHops       = 1 << 16
	MaxComponents = 1 << 20 // per hop
)

// State is a status rebuilt from records.
type State struct {
	// Status is nil until a record was applied.
	Status *record.Status
	// Seq is the Seq of the last record applied.
	Seq uint64
	// Token is the greatest token of the records applied.
	Token uint64
}

// Apply applies a commit record (a delta commit after the records it
// follows), or a snapshot head or shard in order. A record whose header
// has other component counts than the status starts the components of
// those hops afresh (a new run); the records that follow must then fill
// them all in (Check says whether they did).
func (st *State) Apply(r *Record) error {
	if r.Kind == KindDelta {
		if err := st.applyDelta(r); err != nil {
			return err
		}
	} else if r.Run != nil {
		if len(r.Counts) != len(r.Run.Hops) {
			return fmt.Errorf("record %d: %d hop counts for %d hops", r.Seq, len(r.Counts), len(r.Run.Hops))
		}
		if len(r.Run.Hops) > MaxHops {
			return fmt.Errorf("record %d: %d hops (at most %d)", r.Seq, len(r.Run.Hops), MaxHops)
		}
		next := *r.Run
		next.Hops = make([]record.HopStatus, len(r.Run.Hops))
		for i := range next.Hops {
			next.Hops[i] = r.Run.Hops[i]
			if r.Counts[i] < 0 || r.Counts[i] > MaxComponents {
				return fmt.Errorf("record %d: hop %d has %d components (at most %d)", r.Seq, i+1, r.Counts[i], MaxComponents)
			}
			if st.Status != nil && i < len(st.Status.Hops) && len(st.Status.Hops[i].Components) == r.Counts[i] {
				next.Hops[i].Components = st.Status.Hops[i].Components
			} else {
				next.Hops[i].Components = make([]record.ComponentStatus, r.Counts[i])
			}
		}
		st.Status = &next
	}
	if st.Status == nil {
		return fmt.Errorf("record %d (%s) has components but no status precedes it", r.Seq, r.Kind)
	}
	for _, c := range r.Components {
		if c.Hop < 0 || c.Hop >= len(st.Status.Hops) || c.Index < 0 || c.Index >= len(st.Status.Hops[c.Hop].Components) {
			return fmt.Errorf("record %d: component %d of hop %d is outside the status", r.Seq, c.Index, c.Hop)
		}
		st.Status.Hops[c.Hop].Components[c.Index] = c.Status
	}
	st.Seq = r.Seq
	st.Token = max(st.Token, r.Token)
	return nil
}

// Check validates the rebuilt status, as Unmarshal does.
func (st *State) Check() error {
	if st.Status == nil {
		return nil
	}
	return validate(st.Status)
}

// Line is one line of a log, at Offset bytes into it.
type Line struct {
	Offset int64
	Data   []byte
}

// Lines splits a log into its newline-terminated lines; torn is the byte
// count of a last line without its newline (a write cut short), which is
// not among the lines.
func Lines(data []byte) (lines []Line, torn int) {
	off := 0
	for off < len(data) {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return lines, len(data) - off
		}
		lines = append(lines, Line{Offset: int64(off), Data: data[off : off+i+1]})
		off += i + 1
	}
	return lines, 0
}
