package codec

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hopdag/hopdag/record"
)

// Hop is one hop of a delta commit: its header (its status without
// components) and its component count.
type Hop struct {
	Index  int              `json:"index"`
	Count  int              `json:"count"`
	Status record.HopStatus `json:"status"`
}

// Base is what a writer last wrote or read of each hop of the status: the
// record its next delta commit follows. The zero Base knows nothing, and
// the next commit carries every hop. A writer takes the Base of what it
// read (BaseOf after a load) or wrote (BaseOf after a snapshot, the one
// Commits returns after a commit), and drops it (the zero Base, or a load)
// when it does not know what is stored.
type Base struct {
	known bool
	hops  []hopBase
}

// hopBase is one hop as a record encoded it.
type hopBase struct {
	count  int
	header []byte // the JSON of the hop without its components
}

// BaseOf returns the Base of s as a writer wrote or read it whole (a
// snapshot, a load); nil gives the zero Base.
func BaseOf(s *record.Status) Base {
	if s == nil {
		return Base{}
	}
	b, err := baseOf(s)
	if err != nil {
		// Commits fails on the same hop; until then the next commit
		// carries every hop.
		return Base{}
	}
	return b
}

func baseOf(s *record.Status) (Base, error) {
	b := Base{known: true, hops: make([]hopBase, len(s.Hops))}
	for i := range s.Hops {
		h := s.Hops[i]
		h.Components = nil
		enc, err := json.Marshal(&h)
		if err != nil {
			return Base{}, fmt.Errorf("hop %d: %w", i+1, err)
		}
		b.hops[i] = hopBase{count: len(s.Hops[i].Components), header: enc}
	}
	return b, nil
}

// diff returns the hops of s whose header or component count is not
// base's (all of them when base knows none or another number of hops), in
// order, and the Base of s.
func diff(s *record.Status, base Base) ([]Hop, Base, error) {
	next, err := baseOf(s)
	if err != nil {
		return nil, Base{}, err
	}
	all := !base.known || len(base.hops) != len(next.hops)
	var hops []Hop
	for i, h := range next.hops {
		if !all && h.count == base.hops[i].count && bytes.Equal(h.header, base.hops[i].header) {
			continue
		}
		hop := Hop{Index: i, Count: h.count, Status: s.Hops[i]}
		hop.Status.Components = nil
		hops = append(hops, hop)
	}
	return hops, next, nil
}

// applyDelta makes the status of a delta commit r: the run's header of
// r, the hops r carries, and the status's other hops as they are. Its
// hops are those of Apply for the full commit of the same status: a hop
// whose component count changed starts its components afresh.
func (st *State) applyDelta(r *Record) error {
	switch {
	case r.Run == nil:
		return fmt.Errorf("record %d: a delta commit without the run's header", r.Seq)
	case len(r.Run.Hops) > 0 || len(r.Counts) > 0:
		return fmt.Errorf("record %d: a delta commit with the whole hops of a commit", r.Seq)
	case st.Status == nil:
		return fmt.Errorf("record %d: a delta commit but no status precedes it", r.Seq)
	case r.Hops < 0 || r.Hops > MaxHops:
		return fmt.Errorf("record %d: %d hops (at most %d)", r.Seq, r.Hops, MaxHops)
	}
	old := st.Status.Hops
	if r.Hops != len(old) && len(r.Changed) != r.Hops {
		return fmt.Errorf("record %d: %d hops follow %d, and the record carries %d of them, not all", r.Seq, r.Hops, len(old), len(r.Changed))
	}
	next := *r.Run
	next.Hops = make([]record.HopStatus, r.Hops)
	copy(next.Hops, old)
	last := -1
	for _, h := range r.Changed {
		if h.Index <= last || h.Index >= r.Hops || h.Count < 0 || h.Count > MaxComponents {
			return fmt.Errorf("record %d: hop %d of %d components after hop %d, in a run of %d hops", r.Seq, h.Index, h.Count, last, r.Hops)
		}
		last = h.Index
		hop := h.Status
		if h.Index < len(old) && len(old[h.Index].Components) == h.Count {
			hop.Components = old[h.Index].Components
		} else {
			hop.Components = make([]record.ComponentStatus, h.Count)
		}
		next.Hops[h.Index] = hop
	}
	st.Status = &next
	return nil
}
