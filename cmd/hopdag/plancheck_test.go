package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// hopdag plan stays the dry run of any executor (a Go program may run
// inline components), but warns, naming hopdag run, when hopdag run would
// refuse the plan at its plan step; it still exits 0.
func TestPlanWarnsWhatRunRefuses(t *testing.T) {
	code, out, stderr := invoke("plan", catalog, "--from", "v26.06", "--to", "v26.09")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "plan v26.06 -> v26.09")
	assert.Contains(t, stderr, "hopdag plan: warning: hopdag run would refuse this plan")
	assert.Contains(t, stderr, "inline")
	assert.Contains(t, stderr, "bkeagent")

	code, _, stderr = invoke("plan", "testdata/exec-catalog", "--from", "v1.0", "--to", "v2.0")
	assert.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "warning", "an exec catalog runs from the command line")

	// A rule with onFailure: rollback whose exec components have no
	// spec.rollback: run refuses it at its plan step, plan warns.
	code, _, stderr = invoke("plan", "testdata/rollback-catalog", "--from", "v1.0", "--to", "v1.1")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "hopdag plan: warning: hopdag run would refuse this plan")
	assert.Contains(t, stderr, "component db: runner: cannot roll back: components: db 1.1: validate-rollback: no rollback command: declare spec.rollback.args")
	code, _, stderr = invoke("run", "testdata/rollback-catalog", "--from", "v1.0", "--to", "v1.1", "--state", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "component db: runner: cannot roll back: components: db 1.1: validate-rollback: no rollback command: declare spec.rollback.args")

	// The command line runs helm components too.
	code, _, stderr = invoke("plan", helmCatalog(t), "--from", "v0.0", "--to", "v2.0")
	assert.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "warning", "a helm catalog runs from the command line")

	_, _, stderr = invoke("plan", "-h")
	assert.Contains(t, stderr, "warns when hopdag run would refuse")
}
