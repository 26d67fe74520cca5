package runner

import (
	"math"
	"math/rand/v2"
	"time"
)

// retryPolicy is the resolved retry setting of one component.
type retryPolicy struct {
	attempts int
	backoff  time.Duration
	max      time.Duration
}

// delay is the wait before try number next (2 for the first retry):
// backoff doubled per earlier retry, capped, then reduced by up to jitter
// (a fraction in [0, 1]) so that retries of many components spread out. The
// cap holds after jitter.
func (p retryPolicy) delay(next int, jitter float64, rnd *rand.Rand) time.Duration {
	d := p.backoff
	for i := 2; i < next && (p.max == 0 || d < p.max); i++ {
		if d > math.MaxInt64/2 { // doubling would overflow
			break
		}
		d *= 2
	}
	if p.max > 0 && d > p.max {
		d = p.max
	}
	if jitter > 0 && d > 0 {
		d -= time.Duration(float64(d) * jitter * rnd.Float64())
	}
	return d
}
