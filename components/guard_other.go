//go:build !unix

package components

import (
	"context"
	"errors"
	"os"
	"time"
)

// GuardSupported reports whether this system runs commands under the
// guard (WithGuard): not this one.
const GuardSupported = false

func openGuard(string) (*os.File, error) { return nil, errors.New("guard not supported") }

// WaitGuards does nothing here: without the guard there is nothing to
// wait for.
func WaitGuards(context.Context, string, time.Duration, func()) error { return nil }
