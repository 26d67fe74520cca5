package state_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hopdag/hopdag/state"
)

// TestCheckTTL: a TTL below MinTTL is refused, saying the minimum; 1 s
// (what `--lease-ttl 1s` asked for, and lost under load) among them.
func TestCheckTTL(t *testing.T) {
	for _, tc := range []struct {
		ttl     time.Duration
		wantErr bool
	}{
		{0, true},
		{-time.Second, true},
		{time.Second, true},
		{state.MinTTL - time.Millisecond, true},
		{state.MinTTL, false},
		{15 * time.Second, false},
		{time.Hour, false},
	} {
		t.Run(tc.ttl.String(), func(t *testing.T) {
			err := state.CheckTTL(tc.ttl)
			if !tc.wantErr {
				assert.NoError(t, err, "CheckTTL(%v)", tc.ttl)
				return
			}
			if assert.Error(t, err, "CheckTTL(%v)", tc.ttl) {
				assert.Contains(t, err.Error(), "the minimum, "+state.MinTTL.String(), "CheckTTL(%v) names the minimum", tc.ttl)
			}
		})
	}
}
