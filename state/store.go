package state

import (
	"context"

	"github.com/hopdag/hopdag/record"
)

// Store is where the status of one run lives between processes.
type Store interface {
	// Load returns the saved status (the snapshot with the journal
	// replayed), or nil and no error when nothing was saved yet (pass it
	// to runner.Executor.Execute as is: nil starts a fresh run). A record
	// that does not check out is a *CorruptError naming it and the
	// offset; a torn last journal record is dropped.
	Load(ctx context.Context) (*record.Status, error)
	// Save replaces the saved status with s, whole, if token is the
	// token of the lease that currently holds the store's Lock and no
	// greater token wrote the status. Otherwise it returns a *FencedError
	// and changes nothing. Save is atomic: a crash leaves either the old
	// status or the new one, never a mix.
	Save(ctx context.Context, token uint64, s *record.Status) error
	// Commit is Save for a status of which only the changed components
	// (and the run's and hops' own fields) differ from the last one
	// stored: it writes what changed, in one journal record (or a few
	// when a backend's record size limit says so). Fenced as Save is; a
	// crash leaves a prefix of the commit's records, each whole.
	Commit(ctx context.Context, token uint64, s *record.Status, changed []record.Ref) error
}
