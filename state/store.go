package state

import (
	"context"

	"github.com/hopdag/hopdag/runner"
)

// Store is where the status of one run lives between processes.
type Store interface {
	// Load returns the saved status, or nil and no error when nothing was
	// saved yet (pass it to runner.Executor.Execute as is: nil starts a
	// fresh run). A record that does not parse is a *CorruptError.
	Load(ctx context.Context) (*runner.Status, error)
	// Save replaces the saved status with s, if token is the token of the
	// lease that currently holds the store's Lock. Otherwise it returns a
	// *FencedError and changes nothing. Save is atomic: a crash leaves
	// either the old status or the new one, never a mix.
	Save(ctx context.Context, token uint64, s *runner.Status) error
}
