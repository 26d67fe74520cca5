package components

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hopdag/hopdag/runner"
)

// The inline steps are those runner checks --until phases against.
func TestInlineStepsMatchRunner(t *testing.T) {
	assert.Equal(t, runner.InlineSteps, inlineSteps)
}
