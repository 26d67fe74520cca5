package runner

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

func TestRetryPolicyDelay(t *testing.T) {
	const huge = time.Duration(1 << 62)
	tests := []struct {
		name string
		p    retryPolicy
		next int
		want time.Duration
	}{
		{"no backoff", retryPolicy{attempts: 3}, 2, 0},
		{"no backoff, late retry", retryPolicy{attempts: 9}, 9, 0},
		{"first retry waits the backoff", retryPolicy{backoff: 10 * time.Second}, 2, 10 * time.Second},
		{"second retry doubles", retryPolicy{backoff: 10 * time.Second}, 3, 20 * time.Second},
		{"fourth retry", retryPolicy{backoff: 10 * time.Second}, 5, 80 * time.Second},
		{"cap", retryPolicy{backoff: 10 * time.Second, max: 30 * time.Second}, 4, 30 * time.Second},
		{"under the cap", retryPolicy{backoff: 10 * time.Second, max: 30 * time.Second}, 3, 20 * time.Second},
		{"cap below the backoff", retryPolicy{backoff: 10 * time.Second, max: 5 * time.Second}, 2, 5 * time.Second},
		{"many retries stay at the cap", retryPolicy{backoff: time.Second, max: time.Minute}, 1000, time.Minute},
		{"no overflow at 2^62", retryPolicy{backoff: huge}, 3, huge},
		// 1s doubles until one more doubling would overflow: 2^33 s.
		{"no overflow after many doublings", retryPolicy{backoff: time.Second}, 200, time.Second << 33},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.p.delay(tt.next, 0, nil)
			assert.Equal(t, tt.want, got, "%+v.delay(%d, 0) = %v, want %v", tt.p, tt.next, got, tt.want)
		})
	}
}

func TestRetryPolicyDelayJitter(t *testing.T) {
	tests := []struct {
		p      retryPolicy
		next   int
		jitter float64
		lo, hi time.Duration
	}{
		{retryPolicy{backoff: 10 * time.Second}, 2, 0.2, 8 * time.Second, 10 * time.Second},
		{retryPolicy{backoff: 10 * time.Second}, 3, 0.5, 10 * time.Second, 20 * time.Second},
		{retryPolicy{backoff: 10 * time.Second}, 2, 1, 0, 10 * time.Second},
		// The cap holds after jitter: 40s capped to 30s, then shortened.
		{retryPolicy{backoff: 10 * time.Second, max: 30 * time.Second}, 4, 0.2, 24 * time.Second, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/next=%d/jitter=%v", tt.p.backoff, tt.next, tt.jitter), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(1, 2))
			distinct := map[time.Duration]bool{}
			for range 1000 {
				d := tt.p.delay(tt.next, tt.jitter, rnd)
				require.GreaterOrEqual(t, d, tt.lo, "delay(%d, %v) = %v, want >= %v", tt.next, tt.jitter, d, tt.lo)
				require.LessOrEqual(t, d, tt.hi, "delay(%d, %v) = %v, want <= %v", tt.next, tt.jitter, d, tt.hi)
				distinct[d] = true
			}
			assert.Greater(t, len(distinct), 900, "1000 jittered delays gave %d distinct values, want spread", len(distinct))
		})
	}
	t.Run("same seed, same delays", func(t *testing.T) {
		p := retryPolicy{backoff: time.Second}
		a, b := rand.New(rand.NewPCG(7, 0)), rand.New(rand.NewPCG(7, 0))
		for next := 2; next < 10; next++ {
			x, y := p.delay(next, 0.3, a), p.delay(next, 0.3, b)
			require.Equal(t, x, y, "delay(%d) with equal seeds = %v and %v, want equal", next, x, y)
		}
	})
}

func TestRetriesFor(t *testing.T) {
	def := release.Retries{Attempts: 2, Backoff: release.D(time.Second), MaxBackoff: release.D(time.Minute)}
	tests := []struct {
		name string
		def  release.Retries
		cv   *release.ComponentVersion
		want retryPolicy
	}{
		{"no component", def, nil, retryPolicy{2, time.Second, time.Minute}},
		{"component without retries", def, &release.ComponentVersion{}, retryPolicy{2, time.Second, time.Minute}},
		{"component overrides all", def,
			&release.ComponentVersion{Retries: &release.Retries{Attempts: 5, Backoff: release.D(3 * time.Second), MaxBackoff: release.D(9 * time.Second)}},
			retryPolicy{5, 3 * time.Second, 9 * time.Second}},
		{"component overrides attempts only", def,
			&release.ComponentVersion{Retries: &release.Retries{Attempts: 4}},
			retryPolicy{4, time.Second, time.Minute}},
		{"zero default means one attempt", release.Retries{}, nil, retryPolicy{attempts: 1}},
		{"negative attempts mean one", release.Retries{Attempts: -3}, nil, retryPolicy{attempts: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(RunnerFunc(nil), WithDefaultRetries(tt.def))
			got := e.retriesFor(tt.cv)
			assert.Equal(t, tt.want, got, "retriesFor(%+v) = %+v, want %+v", tt.cv, got, tt.want)
		})
	}
}

// The ready set pops in start order: longest remaining path first, then
// by index.
func TestReadySetOrder(t *testing.T) {
	tests := []struct {
		name string
		prio []time.Duration
		push []int
		want []int
	}{
		{"equal priorities: index order", []time.Duration{0, 0, 0, 0}, []int{3, 1, 2, 0}, []int{0, 1, 2, 3}},
		{"longest first, ties by index", []time.Duration{1, 5, 5, 3}, []int{0, 3, 2, 1}, []int{1, 2, 3, 0}},
		{"many words", nil, []int{199, 64, 3, 130, 128, 63}, []int{3, 63, 64, 128, 130, 199}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prio := tt.prio
			if prio == nil {
				prio = make([]time.Duration, 5000)
			}
			var q readySet
			q.init(prio)
			for _, i := range tt.push {
				q.push(i)
			}
			var got []int
			for q.Len() > 0 {
				got = append(got, q.pop())
			}
			assert.Equal(t, tt.want, got, "pops after pushing %v = %v, want %v", tt.push, got, tt.want)
		})
	}
	t.Run("interleaved", func(t *testing.T) {
		var q readySet
		q.init(make([]time.Duration, 300))
		q.push(200)
		q.push(5)
		require.Equal(t, 5, q.pop(), "pop() = want 5")
		q.push(1)
		q.push(299)
		assert.Equal(t, []int{1, 200, 299}, []int{q.pop(), q.pop(), q.pop()}, "pops, want 1 200 299")
		assert.Zero(t, q.Len(), "Len() after popping all")
		assert.Panics(t, func() { q.pop() }, "pop() of an empty set, want a panic")
	})
}
