package state

import (
	"slices"
	"strings"
)

// MemoryRaw is the Memory's records, for the conformance suite's damage
// tests (a statetest.Raw).
func MemoryRaw(m *Memory) memoryRaw { return memoryRaw{m} }

type memoryRaw struct{ m *Memory }

func (r memoryRaw) Names() []string {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	var names []string
	for n := range r.m.files {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (r memoryRaw) Read(name string) []byte {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	if b, ok := r.m.files[name]; ok {
		return slices.Clone(b)
	}
	return nil
}

func (r memoryRaw) Write(name string, data []byte) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	if r.m.files == nil {
		r.m.files = map[string][]byte{}
		r.m.j.v = memVolume(r)
	}
	r.m.files[name] = slices.Clone(data)
	r.m.gen++
}

func (r memoryRaw) Remove(name string) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	delete(r.m.files, strings.TrimSpace(name))
	r.m.gen++
}

// Restart makes the Memory forget how far it wrote its journal, as a
// new process would (a statetest restarter).
func (r memoryRaw) Restart() {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.j.acked, r.m.j.fresh = ack{}, false
}

// Written is the status bytes a Memory or File wrote.
func Written(b any) int64 {
	switch s := b.(type) {
	case *Memory:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.j.written
	case *File:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.j.written
	}
	return 0
}

// JournalHeader is the first line of a journal with the given ID,
// following commit seq: what a crash can leave as the whole journal.
func JournalHeader(id string, seq, token uint64) []byte {
	h, err := header(id, seq, token)
	if err != nil {
		panic(err)
	}
	return h
}

// HoldHandle takes the File handle's mutex, as a Commit in flight holds
// it, until release is called.
func HoldHandle(f *File) (release func()) {
	f.mu.Lock()
	return f.mu.Unlock
}
