package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A --from state that leaves out a track tied to one it names planned as
// if the missing track did not exist: platform=13.01.2 alone went straight
// to 27.03.0, which needs kubernetes >= v1.33. plan and targets refuse it
// and say how to give the missing track, as a flag.
func TestStateLeavesOutTiedTrack(t *testing.T) {
	const want = "hopdag %s: path: invalid option: the current state leaves out track kubernetes, tied to track platform " +
		"(release 13.01.0 on track platform supports kubernetes >= v1.32.0, < v1.34.0): " +
		"give its version in the state: --from platform=%s,kubernetes=VERSION\n"
	tests := []struct {
		name string
		args []string
		from string
	}{
		{"plan", []string{"plan", twoTrack, "--from", "platform=13.01.2", "--to", "platform=27.03.0"}, "13.01.2"},
		{"targets", []string{"targets", twoTrack, "--from", "platform=13.01.0"}, "13.01.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := invoke(tt.args...)
			assert.Equal(t, exitInvalid, code, "hopdag %s: stdout:\n%s", strings.Join(tt.args, " "), stdout)
			assert.Empty(t, stdout)
			assert.Equal(t, fmt.Sprintf(want, tt.name, tt.from), stderr)
		})
	}
}
