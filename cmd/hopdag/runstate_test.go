package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run refused before it starts (a usage error, a plan the command line
// cannot run, a template value missing, an --until step the plan does not
// have) creates no --state directory: nothing is created until the run is
// about to start.
func TestRefusedRunCreatesNoState(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"usage", []string{execCatalog, "--from", "v1.0", "--to", "v2.0", "--mode", "sideways"}, exitUsage, "--mode"},
		{"bad --set", []string{execCatalog, "--from", "v1.0", "--to", "v2.0", "--set", "novalue"}, exitUsage, "want KEY=VALUE"},
		{"no route", []string{execCatalog, "--from", "v1.0", "--to", "v9.0"}, exitInvalid, "v9.0"},
		{"inline components", []string{"-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3"}, exitInvalid, "inline components"},
		{"a value missing", []string{execCatalog, "--from", "v1.0", "--to", "v2.0"}, exitInvalid, "give it with --set out=VALUE"},
		{"an --until step the plan does not have", []string{"-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--simulate", "--until", "v26.06-rc.3/nope"}, exitInvalid, "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			args := append([]string{"run"}, tt.args...)
			code, _, stderr := invoke(append(args, "--state", state)...)
			assert.Equal(t, tt.code, code, "hopdag %s; stderr:\n%s", strings.Join(args, " "), stderr)
			assert.Contains(t, stderr, tt.inStderr)
			_, err := os.Stat(state)
			assert.ErrorIs(t, err, os.ErrNotExist, "hopdag %s --state %s created it", strings.Join(args, " "), state)
		})
	}
	// A run that starts creates it.
	u := newUpgrade(t)
	code, _, stderr := invoke(u.runArgs()...)
	require.Equal(t, 0, code, stderr)
	assert.DirExists(t, u.state)
}
