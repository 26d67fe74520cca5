package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hopdag/hopdag/record"
)

// shown puts every message of a status in the command line's terms,
// the component rows' errors too (the table's ERROR column once said
// "or apply with Force" while the message line said --force-conflicts).
func TestShownTranslatesEveryMessage(t *testing.T) {
	const lib = "apply: conflict with field manager ops over .data.greeting; change it back, or apply with Force to take them over"
	const want = "apply: conflict with field manager ops over .data.greeting; change it back, or pass --force-conflicts to take them over"
	st := &record.Status{Phase: record.Failed, Message: lib, From: "v1.0", To: "v2.0",
		LastFailure: &record.Failure{Component: "web", Error: lib},
		Hops: []record.HopStatus{{From: "v1.0", To: "v2.0", Phase: record.Failed, Message: "component web failed: " + lib,
			Components: []record.ComponentStatus{{Name: "web", Phase: record.Failed, Error: lib}}}}}
	state := "S"
	got := (&cli{state: &state}).shown(st)
	assert.Equal(t, want, got.Message)
	assert.Equal(t, want, got.LastFailure.Error)
	assert.Equal(t, "component web failed: "+want, got.Hops[0].Message)
	assert.Equal(t, want, got.Hops[0].Components[0].Error)
	assert.Equal(t, lib, st.Hops[0].Components[0].Error, "the status itself is not changed")
}

// A run that is rolling back is in flight: status exits 3 while its
// coordinator holds the lock, and abandon needs --force once it does not.
func TestRollingBackInFlight(t *testing.T) {
	assert.True(t, inFlight(record.RollingBack))
	assert.Equal(t, exitRunning, statusCode(&record.Status{Phase: record.RollingBack}))
}
