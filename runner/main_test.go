package runner_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test or benchmark leaves a goroutine
// running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
