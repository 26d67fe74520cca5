package state_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every keeper goroutine ends with its Stop or its parent context.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
