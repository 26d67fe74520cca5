package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/codec"
)

// Load reads the snapshot the head names and replays the journal records
// after it, in one consistent List; nil and no error when nothing was
// saved.
func (s *Store) Load(ctx context.Context) (*record.Status, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	return st.Status, nil
}

// errMissing is an object the head's chain names that is not there: the
// store was damaged by hand.
var errMissing = errors.New("an object of the status is missing")

// load reads the store's objects (the head among them) in one List and
// rebuilds the status, and makes the view the one it read.
func (s *Store) load(ctx context.Context) (*codec.State, error) {
	for try := 0; ; try++ {
		st, err := s.loadOnce(ctx)
		if !errors.Is(err, errHeadAppeared) {
			return st, err
		}
		if try == 10 {
			return nil, errorf("load %s: the head keeps appearing between the list of the store's objects and its read; is another writer creating it over and over?", s.path("ConfigMap", s.name))
		}
	}
}

// errHeadAppeared: the head was created between loadOnce's list and its
// read of the head by name; the load starts over.
var errHeadAppeared = errors.New("store: the head appeared during the load")

func (s *Store) loadOnce(ctx context.Context) (*codec.State, error) {
	s.v.fresh = false
	var list corev1.ConfigMapList
	if err := s.c.List(ctx, &list, client.InNamespace(s.namespace), client.MatchingLabels{labelStore: s.name}); err != nil {
		return nil, errorf("load %s: %w", s.path("ConfigMap", s.name), err)
	}
	objs := make(map[string]*corev1.ConfigMap, len(list.Items))
	for i := range list.Items {
		objs[list.Items[i].Name] = &list.Items[i]
	}
	v := view{versions: map[string]string{}}
	st := &codec.State{}
	head := objs[s.name]
	if head == nil {
		// Not among the labelled objects: absent, or its label was taken
		// off (a GitOps prune, an apply of a ConfigMap of that name).
		h, err := s.head(ctx)
		if err != nil {
			return nil, err
		}
		if h != nil && h.Labels[labelStore] == s.name {
			return nil, errHeadAppeared // created since the list: look again
		}
		if h != nil {
			return nil, &state.CorruptError{Path: s.path("ConfigMap", s.name) + " label " + labelStore,
				Err: fmt.Errorf("the head has no label %s=%s, which the store sets on its objects and lists them by: put it back", labelStore, s.name)}
		}
	}
	if head != nil {
		if err := s.checkHead(head); err != nil {
			return nil, err
		}
		v.head = head
		v.gen, v.id, v.n = num(head, annGeneration), head.Annotations[annID], num(head, annChunks)
	}
	if v.gen != 0 {
		if err := s.replay(st, &v, objs); err != nil {
			return nil, err
		}
	}
	v.seq, v.token, v.exists = st.Seq, st.Token, st.Status != nil
	v.base = codec.BaseOf(st.Status)
	if st.Status != nil {
		for _, h := range st.Status.Hops {
			v.counts += len(h.Components)
		}
	}
	v.fresh = true
	s.v = v
	return st, nil
}

// replay applies the snapshot's chunks and the journal's records to st,
// and records their sizes and versions in v: it reads the snapshot
// (snapshot), walks the journal's chain back from the head to the
// snapshot (chain), and applies the records forward (journal).
func (s *Store) replay(st *codec.State, v *view, objs map[string]*corev1.ConfigMap) error {
	l := &loading{s: s, st: st, v: v, objs: objs}
	snapSeq, err := l.snapshot()
	if err != nil {
		return err
	}
	chain, err := l.chain(snapSeq)
	if err != nil {
		return err
	}
	if err := l.journal(chain); err != nil {
		return err
	}
	if err := st.Check(); err != nil {
		return &state.CorruptError{Path: s.path("ConfigMap", s.name), Err: fmt.Errorf("the status its records add up to is not valid: %w", err)}
	}
	return nil
}

// loading is one replay: the state it adds up, the view it fills in, and
// the store's objects by name, as one List read them.
type loading struct {
	s    *Store
	st   *codec.State
	v    *view
	objs map[string]*corev1.ConfigMap
}

// read returns the record of object name, which the head's chain names
// as what, and notes the object's resource version.
func (l *loading) read(name string, what string) ([]byte, *codec.Record, error) {
	s := l.s
	cm := l.objs[name]
	if cm == nil {
		return nil, nil, &state.CorruptError{Path: s.path("ConfigMap", name), Err: fmt.Errorf("%w: %s, which %s names, is not there", errMissing, what, s.path("ConfigMap", s.name))}
	}
	data := cm.BinaryData[dataKey]
	l.v.versions[name] = cm.ResourceVersion
	r, err := codec.Unframe(data)
	if err != nil {
		return nil, nil, s.corrupt(name, data, err)
	}
	return data, r, nil
}

// snapshot applies the chunks of the head's generation: a snapshot head,
// then its shards, as many as the head ConfigMap says. It returns the
// snapshot's seq.
func (l *loading) snapshot() (snapSeq uint64, err error) {
	s, v := l.s, l.v
	for i := range v.n {
		name := chunkName(s.name, v.gen, v.id, i)
		data, r, err := l.read(name, fmt.Sprintf("chunk %d of the %d of snapshot generation %d", i, v.n, v.gen))
		if err != nil {
			return 0, err
		}
		err = chunkRecord(i, r, v.n, snapSeq)
		if err == nil {
			if i == 0 {
				snapSeq = r.Seq
			}
			err = l.st.Apply(r)
		}
		if err != nil {
			return 0, s.corrupt(name, nil, err)
		}
		v.snapBytes += int64(len(data))
	}
	if v.n == 0 {
		return 0, &state.CorruptError{Path: s.path("ConfigMap", s.name) + " annotation " + annChunks, Err: fmt.Errorf("generation %d has no chunks", v.gen)}
	}
	return snapSeq, nil
}

// chunkRecord checks that r, chunk i of n, is in its place: the snapshot
// head first, saying n-1 shards follow, then shards 0, 1, ... of its seq.
func chunkRecord(i uint64, r *codec.Record, n, snapSeq uint64) error {
	switch {
	case i == 0 && r.Kind != codec.KindSnapshot:
		return fmt.Errorf("the first chunk is a %s record, want a snapshot head", r.Kind)
	case i == 0 && uint64(r.Shards)+1 != n:
		return fmt.Errorf("the snapshot head says %d shards follow, the head ConfigMap's %s says %d chunks in all", r.Shards, annChunks, n)
	case i > 0 && (r.Kind != codec.KindShard || uint64(r.Shard) != i-1 || r.Seq != snapSeq):
		return fmt.Errorf("a %s record of seq %d, want shard %d of seq %d", r.Kind, r.Seq, i-1, snapSeq)
	}
	return nil
}

// chain returns the names of the journal's records, from the head's last
// record back to the one after the snapshot of seq snapSeq, each record
// naming the one before it.
func (l *loading) chain(snapSeq uint64) ([]string, error) {
	s, v := l.s, l.v
	var chain []string
	for ref, from := v.head.Annotations[annJournal], s.path("ConfigMap", s.name)+" annotation "+annJournal; ref != ""; {
		seq, _ := refSeq(ref)
		if seq <= snapSeq {
			return nil, &state.CorruptError{Path: from, Err: fmt.Errorf("record %q does not follow snapshot %d", ref, snapSeq)}
		}
		name := recordName(s.name, v.gen, v.id, ref)
		cm := l.objs[name]
		if cm == nil {
			return nil, &state.CorruptError{Path: s.path("ConfigMap", name), Err: fmt.Errorf("%w: journal record %d, which %s names, is not there", errMissing, seq, from)}
		}
		chain = append(chain, name)
		prev := cm.Annotations[annPrev]
		from = s.path("ConfigMap", name) + " annotation " + annPrev
		if err := checkRef(prev, from); err != nil {
			return nil, err
		}
		if p, _ := refSeq(prev); prev != "" && p+1 != seq || prev == "" && seq != snapSeq+1 {
			return nil, &state.CorruptError{Path: from, Err: fmt.Errorf("record %d names %q before it", seq, prev)}
		}
		ref = prev
	}
	return chain, nil
}

// journal applies the records of chain (last first) in seq order.
func (l *loading) journal(chain []string) error {
	s, v, st := l.s, l.v, l.st
	for i := len(chain) - 1; i >= 0; i-- {
		name := chain[i]
		data, r, err := l.read(name, "a journal record")
		if err != nil {
			return err
		}
		if !r.IsCommit() || r.Seq != st.Seq+1 {
			err = fmt.Errorf("a %s record of seq %d, want commit %d", r.Kind, r.Seq, st.Seq+1)
		} else {
			err = st.Apply(r)
		}
		if err != nil {
			return s.corrupt(name, nil, err)
		}
		v.logBytes += int64(len(data))
		v.last = strings.TrimPrefix(name, recordPrefix(s.name, v.gen, v.id))
	}
	return nil
}

// corrupt is the *state.CorruptError of object name's record: at its
// first byte that no record line holds (a control character before the
// final newline), when data has one.
func (s *Store) corrupt(name string, data []byte, err error) error {
	ce := &state.CorruptError{Path: s.path("ConfigMap", name) + " binaryData." + dataKey, Err: err}
	for i, c := range data {
		if c < 0x20 && c != '\t' && !(c == '\n' && i == len(data)-1) {
			ce.Offset = int64(i)
			ce.Err = fmt.Errorf("byte %#02x cannot appear in a record, and %w", c, err)
			break
		}
	}
	return ce
}
