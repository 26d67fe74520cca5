// Package statetest is the conformance suite of state backends: one set
// of tests that every Store and Lock (Memory, File, etcd, yours) must pass,
// so that they are interchangeable under a runner.
//
// It is for tests; production code never imports it.
package statetest

import (
	"testing"
	"time"

	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// Backend is what the suite tests: a Store that is also the Lock that
// fences it.
type Backend interface {
	state.Store
	state.Lock
}

// Env is one test's view of a backend's storage.
type Env struct {
	// Open returns a new handle on the test's storage, as another process
	// or coordinator would open it. Register its cleanup with t.Cleanup.
	Open func() Backend
	// Expire ends the lease now, as if its TTL had passed without a
	// refresh: advance a fake clock, revoke an etcd lease.
	Expire func(l state.Lease)
	// Clock is the clock leases are timed on, given to Keepers; nil is the
	// wall clock.
	Clock runner.Clock
	// TTL is the lease TTL the suite uses (a backend may have a minimum);
	// 0 means a minute.
	TTL time.Duration
	// Raw gives the suite the backend's stored records, to damage and
	// delete them as a disk error, a crash or an operator would.
	Raw Raw
	// Journal names the record of Raw whose last line a crash can tear
	// (an append that was cut short); "" when records are written whole
	// (etcd: a value is committed whole or not at all).
	Journal string
}

// Raw is a backend's stored records: files, keys. Its methods fail the
// test on errors they cannot report. A Raw whose Env.Open returns the
// same handle every time (a Memory) also has a Restart method, which
// makes that handle forget how far it wrote, as a new process's would.
type Raw interface {
	// Names lists the records that hold the status and the lock's state,
	// sorted.
	Names() []string
	// Read returns a record; nil when it does not exist.
	Read(name string) []byte
	// Write replaces a record.
	Write(name string, data []byte)
	// Remove deletes a record.
	Remove(name string)
}

// restarter is a Raw whose Env.Open returns the one handle there is (a
// Memory): Restart makes it what a new process's handle would be after
// a crash, one that does not know how far the crashed one wrote.
type restarter interface{ Restart() }

// restart is a crash of the writer's process: handles that Open
// returns again forget what the crashed one wrote.
func restart(env Env) {
	if r, ok := env.Raw.(restarter); ok {
		r.Restart()
	}
}

// Run runs the suite. newEnv is called once per subtest and must return
// fresh, empty storage.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			if env.TTL == 0 {
				env.TTL = time.Minute
			}
			tc.run(t, env)
		})
	}
}
