package state

import (
	"context"
	"sync"
	"time"

	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state/internal/codec"
)

// Memory is a Store and a Lock in memory: for tests, and for a single
// process that needs fencing between goroutines but no durability. Its
// zero value is ready to use, on the wall clock. It is safe for concurrent
// use.
//
// Memory keeps the status encoded as the other backends do, so Load
// returns a status that shares nothing with the one saved, and what
// survives a Save is exactly what would survive a file or etcd.
type Memory struct {
	clock runner.Clock

	mu     sync.Mutex
	status []byte
	lock   record
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

// Load returns a copy of the saved status, or nil before the first Save.
func (m *Memory) Load(ctx context.Context) (*runner.Status, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	b := m.status
	m.mu.Unlock()
	if b == nil {
		return nil, nil
	}
	s, err := codec.Unmarshal(b)
	if err != nil {
		return nil, &CorruptError{Path: "memory", Err: err}
	}
	return s, nil
}

// Save stores a copy of s if token is the current lease's.
func (m *Memory) Save(ctx context.Context, token uint64, s *runner.Status) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := codec.Marshal(s)
	if err != nil {
		return errorf("save: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.lock.check(m.now(), token); err != nil {
		return err
	}
	m.status = b
	return nil
}

// Acquire takes the lock; see Lock.
func (m *Memory) Acquire(ctx context.Context, holder string, ttl time.Duration) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	if err := checkAcquire(holder, ttl); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lock.acquire(m.now(), holder, ttl, false)
}

// Refresh extends the lease; see Lock.
func (m *Memory) Refresh(ctx context.Context, l Lease) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lock.refresh(m.now(), l)
}

// Release frees the lock; see Lock.
func (m *Memory) Release(ctx context.Context, l Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lock.release(m.now(), l)
}
