package components_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: a
// runner must not leave pipe readers, process waiters or pollers behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
