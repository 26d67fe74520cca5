package state

import (
	"context"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// Memory is a Store and a Lock in memory: for tests, and for a single
// process that needs fencing between goroutines but no durability. Its
// zero value is ready to use, on the wall clock. It is safe for concurrent
// use.
//
// Memory keeps the same records as File (a snapshot, a journal, the lease
// record), encoded the same way, so Load returns a status that shares
// nothing with the one saved, and what survives a Save or a Commit is
// exactly what would survive a file or etcd.
type Memory struct {
	clock runner.Clock

	mu    sync.Mutex
	files map[string][]byte
	gen   uint64 // counts writes: the volume's stamp
	j     journal
}

// NewMemory returns an empty Memory store. It takes WithClock.
func NewMemory(opts ...Option) *Memory {
	o := newOptions(opts)
	return &Memory{clock: o.clock}
}

func (m *Memory) now() time.Time {
	if m.clock == nil {
		return time.Now()
	}
	return m.clock.Now()
}

// do runs fn holding the mutex, with the volume set up.
func (m *Memory) do(ctx context.Context, fn func(now time.Time) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files == nil {
		m.files = map[string][]byte{}
		m.j.v = memVolume{m}
	}
	return fn(m.now())
}

// Load returns a copy of the saved status, or nil before the first Save.
func (m *Memory) Load(ctx context.Context) (*record.Status, error) {
	var st *record.Status
	err := m.do(ctx, func(time.Time) error {
		j := journal{v: m.j.v} // a reader's view, as File's: the writer's is m.j
		s, err := j.load()
		if err == nil {
			st = s.Status
		}
		return err
	})
	return st, err
}

// Save stores a copy of s if token is the current lease's.
func (m *Memory) Save(ctx context.Context, token uint64, s *record.Status) error {
	return m.commit(ctx, token, s, nil, true)
}

// Commit records the changed components of s if token is the current
// lease's.
func (m *Memory) Commit(ctx context.Context, token uint64, s *record.Status, changed []record.Ref) error {
	return m.commit(ctx, token, s, changed, false)
}

func (m *Memory) commit(ctx context.Context, token uint64, s *record.Status, changed []record.Ref, all bool) error {
	if s == nil {
		return errNilStatus
	}
	return m.do(ctx, func(now time.Time) error {
		r, err := readRecord(m.j.v)
		if err != nil {
			return err
		}
		if err := r.check(now, token); err != nil {
			return err
		}
		_, err = m.j.commit(token, s, changed, all)
		return err
	})
}

// Acquire takes the lock; see Lock.
func (m *Memory) Acquire(ctx context.Context, holder string, ttl time.Duration) (Lease, error) {
	if err := checkAcquire(holder, ttl); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return Lease{}, cerr
		}
		return Lease{}, err
	}
	var lease Lease
	err := m.do(ctx, func(now time.Time) error {
		r, err := readRecord(m.j.v)
		if err != nil {
			return err
		}
		written, err := m.j.lastToken()
		if err != nil {
			return err
		}
		if lease, err = r.acquire(now, holder, ttl, written); err != nil {
			return err
		}
		return writeRecord(m.j.v, r)
	})
	return lease, err
}

// Refresh extends the lease; see Lock.
func (m *Memory) Refresh(ctx context.Context, l Lease) (Lease, error) {
	var lease Lease
	err := m.do(ctx, func(now time.Time) error {
		r, err := readRecord(m.j.v)
		if err != nil {
			return err
		}
		if lease, err = r.refresh(now, l); err != nil {
			return err
		}
		return writeRecord(m.j.v, r)
	})
	return lease, err
}

// Release frees the lock; see Lock.
func (m *Memory) Release(ctx context.Context, l Lease) error {
	return m.do(ctx, func(now time.Time) error {
		r, err := readRecord(m.j.v)
		if err != nil {
			return err
		}
		if err := r.release(now, l); err != nil {
			return err
		}
		return writeRecord(m.j.v, r)
	})
}

// memVolume is a Memory's records as a volume. The caller holds m.mu.
type memVolume struct{ m *Memory }

func (v memVolume) where(name string) string { return "memory:" + name }

func (v memVolume) read(name string) ([]byte, error) {
	b, ok := v.m.files[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return b, nil
}

func (v memVolume) replace(name string, data []byte) error {
	v.m.files[name] = append([]byte(nil), data...)
	v.m.gen++
	return nil
}

func (v memVolume) appendAt(name string, off int64, data []byte) error {
	b := v.m.files[name]
	if int64(len(b)) < off {
		return fmt.Errorf("%s is %d bytes, shorter than %d", v.where(name), len(b), off)
	}
	// In place: nothing outside the store keeps the slice (reads copy
	// what they keep), so appends cost what they add.
	v.m.files[name] = append(b[:off], data...)
	v.m.gen++
	return nil
}

func (v memVolume) stamp() (any, error) { return v.m.gen, nil }
