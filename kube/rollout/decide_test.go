package rollout_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/kube/rollout"
)

var t0 = at("2026-12-09T10:00:00Z")

// fleet is n members c01..cNN, none started.
func fleet(n int, labels func(i int) map[string]string) []rollout.Member {
	var ms []rollout.Member
	for i := range n {
		m := rollout.Member{Key: fmt.Sprintf("c%02d", i+1)}
		if labels != nil {
			m.Labels = labels(i)
		}
		ms = append(ms, m)
	}
	return ms
}

func waveNames(d rollout.Decision) []string {
	var out []string
	for _, w := range d.Waves {
		out = append(out, fmt.Sprintf("%s%v", w.Name, w.Members))
	}
	return out
}

func TestWaves(t *testing.T) {
	region := func(i int) map[string]string {
		if i == 5 {
			return nil
		}
		return map[string]string{"hopdag.io/wave": []string{"eu", "us", "ap"}[i%3]}
	}
	tests := []struct {
		name string
		spec rollout.Spec
		n    int
		lab  func(int) map[string]string
		want []string
	}{
		{"one wave", rollout.Spec{}, 3, nil, []string{"fleet[c01 c02 c03]"}},
		{"first two are canaries, then waves of a third", rollout.Spec{CanaryCount: 2, WaveSize: rollout.Amount{N: 34, Percent: true}}, 6, nil,
			[]string{"canary[c01 c02]", "wave-1[c03 c04 c05]", "wave-2[c06]"}},
		{"named canaries", rollout.Spec{Canaries: []string{"c03", "nope"}}, 3, nil, []string{"canary[c03]", "fleet[c01 c02]"}},
		{"by label, in the given order, then the others, then unlabelled", rollout.Spec{WaveLabel: "hopdag.io/wave", WaveOrder: []string{"us"}}, 7, region,
			[]string{"us[c02 c05]", "ap[c03]", "eu[c01 c04 c07]", "unlabelled[c06]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := rollout.Decide(tt.spec, fleet(tt.n, tt.lab), t0)
			assert.Equal(t, tt.want, waveNames(d))
		})
	}
}

func TestDecide(t *testing.T) {
	started := func(m rollout.Member, ago time.Duration) rollout.Member { m.Started = t0.Add(-ago); return m }
	done := func(m rollout.Member, ago time.Duration) rollout.Member {
		m.AtTarget, m.Since = true, t0.Add(-ago)
		if m.Started.IsZero() {
			m.Started = m.Since.Add(-time.Minute)
		}
		return m
	}
	failed := func(m rollout.Member) rollout.Member { m.Started, m.Failed = t0.Add(-time.Hour), true; return m }
	tests := []struct {
		name    string
		spec    rollout.Spec
		members func([]rollout.Member) []rollout.Member
		start   []string
		phase   rollout.Phase
		reason  string
		wave    int
		next    time.Time
	}{
		{"the canary starts alone", rollout.Spec{CanaryCount: 1, MaxConcurrency: rollout.Amount{N: 2}}, nil, []string{"c01"}, rollout.Progressing, "Progressing", 0, time.Time{}},
		{"the next wave waits for the canary's soak", rollout.Spec{CanaryCount: 1, MaxConcurrency: rollout.Amount{N: 2}, MinSuccessTime: 10 * time.Minute},
			func(ms []rollout.Member) []rollout.Member { ms[0] = done(ms[0], 4*time.Minute); return ms }, nil, rollout.Progressing, "Progressing", 0, t0.Add(6 * time.Minute)},
		{"then starts up to the concurrency", rollout.Spec{CanaryCount: 1, MaxConcurrency: rollout.Amount{N: 2}, MinSuccessTime: 10 * time.Minute},
			func(ms []rollout.Member) []rollout.Member { ms[0] = done(ms[0], 11*time.Minute); return ms }, []string{"c02", "c03"}, rollout.Progressing, "Progressing", 1, time.Time{}},
		{"a failed canary exceeds a zero budget", rollout.Spec{CanaryCount: 1},
			func(ms []rollout.Member) []rollout.Member { ms[0] = failed(ms[0]); return ms }, nil, rollout.PhaseFailed, "BudgetExceeded", 1, time.Time{}},
		{"one failure of four within a budget of 25%", rollout.Spec{MaxFailures: rollout.Amount{N: 25, Percent: true}, MaxConcurrency: rollout.Amount{N: 4}},
			func(ms []rollout.Member) []rollout.Member { ms[0] = failed(ms[0]); return ms[:4] }, []string{"c02", "c03", "c04"}, rollout.Progressing, "Progressing", 0, time.Time{}},
		{"two exceed it", rollout.Spec{MaxFailures: rollout.Amount{N: 25, Percent: true}, MaxConcurrency: rollout.Amount{N: 4}},
			func(ms []rollout.Member) []rollout.Member { ms[0], ms[1] = failed(ms[0]), failed(ms[1]); return ms[:4] }, nil, rollout.PhaseFailed, "BudgetExceeded", 0, time.Time{}},
		{"past its deadline a cluster has failed", rollout.Spec{ProgressDeadline: time.Hour},
			func(ms []rollout.Member) []rollout.Member { ms[0] = started(ms[0], 2*time.Hour); return ms }, nil, rollout.PhaseFailed, "BudgetExceeded", 0, time.Time{}},
		{"before it, it upgrades and the deadline is when to look again", rollout.Spec{ProgressDeadline: time.Hour},
			func(ms []rollout.Member) []rollout.Member { ms[0] = started(ms[0], 20*time.Minute); return ms }, nil, rollout.Progressing, "Progressing", 0, t0.Add(40 * time.Minute)},
		{"a gated wave waits", rollout.Spec{CanaryCount: 1, Gates: []string{"fleet"}},
			func(ms []rollout.Member) []rollout.Member { ms[0] = done(ms[0], time.Hour); return ms }, nil, rollout.WaitingForApproval, "WaitingForApproval", 1, time.Time{}},
		{"approved, it starts", rollout.Spec{CanaryCount: 1, Gates: []string{"fleet"}, Approved: []string{"fleet"}},
			func(ms []rollout.Member) []rollout.Member { ms[0] = done(ms[0], time.Hour); return ms }, []string{"c02"}, rollout.Progressing, "Progressing", 1, time.Time{}},
		{"paused", rollout.Spec{Paused: true}, nil, nil, rollout.PhasePaused, "Paused", 0, time.Time{}},
		{"aborted", rollout.Spec{Aborted: true, Paused: true}, nil, nil, rollout.PhaseAborted, "Aborted", 0, time.Time{}},
		{"all done", rollout.Spec{},
			func(ms []rollout.Member) []rollout.Member {
				for i := range ms {
					ms[i] = done(ms[i], time.Hour)
				}
				return ms
			}, nil, rollout.Completed, "Completed", 1, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := fleet(5, nil)
			if tt.members != nil {
				ms = tt.members(ms)
			}
			d := rollout.Decide(tt.spec, ms, t0)
			assert.Equal(t, tt.start, d.Start)
			assert.Equal(t, tt.phase, d.Phase, d.Message)
			assert.Equal(t, tt.reason, d.Reason)
			assert.Equal(t, tt.wave, d.Wave)
			assert.Equal(t, tt.next, d.Next)
		})
	}
}

func TestDecideWindows(t *testing.T) {
	// The rollout's window: weekdays 09:00-17:00 UTC; c02's own: Saturdays.
	office, err := rollout.Compile([]rollout.Window{{Schedule: "0 9 * * 1-5", Duration: 8 * time.Hour}})
	require.NoError(t, err)
	sat, err := rollout.Compile([]rollout.Window{{Schedule: "0 0 * * 6", Duration: 24 * time.Hour}})
	require.NoError(t, err)
	ms := fleet(2, nil)
	ms[1].Windows = sat
	spec := rollout.Spec{MaxConcurrency: rollout.Amount{N: 2}, Windows: office}
	d := rollout.Decide(spec, ms, t0) // a Wednesday, 10:00
	assert.Equal(t, []string{"c01"}, d.Start, "c02's window is closed")
	assert.Equal(t, "WaitingForWindow", d.Members[1].Reason)
	assert.True(t, d.Members[1].NextWindow.IsZero(), "Saturday never meets the weekday window")

	night := at("2026-12-09T20:00:00Z")
	d = rollout.Decide(spec, fleet(1, nil), night)
	assert.Empty(t, d.Start)
	assert.Equal(t, rollout.WaitingForWindow, d.Phase, d.Message)
	assert.Equal(t, at("2026-12-10T09:00:00Z"), d.Next)
	assert.Contains(t, d.Message, "1 waiting for a maintenance window, the next opening 2026-12-10T09:00:00Z")
}

// TestPropertyRollout simulates rollouts of random fleets and specs:
// each step decides, starts what the decision says, and lets members in
// flight succeed or fail at random as time passes. At every step at most
// maxConcurrency members are in flight, no member of a wave starts while
// an earlier wave has one unsettled, nothing starts once the budget is
// exceeded, no member starts twice; every rollout ends Completed or
// Failed.
func TestPropertyRollout(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for trial := range 300 {
		n := 1 + rng.IntN(40)
		spec := rollout.Spec{
			CanaryCount:    rng.IntN(3),
			WaveSize:       rollout.Amount{N: rng.IntN(60), Percent: true},
			MaxConcurrency: rollout.Amount{N: 1 + rng.IntN(5)},
			MaxFailures:    rollout.Amount{N: rng.IntN(4)},
			MinSuccessTime: time.Duration(rng.IntN(3)) * time.Minute,
		}
		if rng.IntN(2) == 0 {
			spec.ProgressDeadline = time.Duration(5+rng.IntN(20)) * time.Minute
		}
		failP := rng.Float64() * 0.3
		ms := fleet(n, nil)
		now := t0
		var d rollout.Decision
		for step := 0; ; step++ {
			require.Less(t, step, 10000, "trial %d did not end", trial)
			d = rollout.Decide(spec, ms, now)
			if d.Phase == rollout.Completed || d.Phase == rollout.PhaseFailed {
				require.Empty(t, d.Start)
				break
			}
			inFlight := d.Counts.Soaking + len(d.Start)
			for _, m := range ms {
				if m.Running {
					inFlight++
				}
			}
			require.Equal(t, inFlight-len(d.Start), d.InFlight, "trial %d step %d: Decision.InFlight", trial, step)
			require.LessOrEqual(t, inFlight, spec.Concurrency(n), "trial %d step %d: in flight; spec %+v decision %+v", trial, step, spec, d)
			for _, k := range d.Start {
				i := slices.IndexFunc(ms, func(m rollout.Member) bool { return m.Key == k })
				require.True(t, ms[i].Started.IsZero(), "trial %d: %s started twice", trial, k)
				for _, s := range d.Members {
					if s.Wave < d.Members[i].Wave {
						require.Contains(t, []rollout.State{rollout.Succeeded, rollout.Failed}, s.State, "trial %d: %s (wave %d) starts while %s of wave %d is %s", trial, k, d.Members[i].Wave, s.Key, s.Wave, s.State)
					}
				}
				ms[i].Started, ms[i].Running = now, true
			}
			now = now.Add(time.Minute)
			for i := range ms {
				m := &ms[i]
				if m.Started.IsZero() || m.AtTarget || m.Failed || rng.IntN(3) != 0 {
					continue
				}
				if rng.Float64() < failP {
					m.Failed = true
				} else {
					m.AtTarget, m.Since = true, now
				}
				m.Running = false
			}
		}
		if d.Phase == rollout.PhaseFailed {
			require.Greater(t, d.Failures, d.Budget)
		} else {
			require.LessOrEqual(t, d.Failures, d.Budget)
			require.Equal(t, n, d.Counts.Succeeded+d.Counts.Failed)
		}
	}
}

func ExampleDecide() {
	spec := rollout.Spec{CanaryCount: 1, WaveSize: rollout.Amount{N: 2}, MaxConcurrency: rollout.Amount{N: 2}, MinSuccessTime: 10 * time.Minute}
	ms := []rollout.Member{{Key: "prod/paris"}, {Key: "prod/lyon"}, {Key: "prod/nice"}, {Key: "prod/lille"}}
	now := time.Date(2026, 12, 9, 10, 0, 0, 0, time.UTC)
	d := rollout.Decide(spec, ms, now)
	for _, w := range d.Waves {
		fmt.Println(w.Name, w.Members)
	}
	fmt.Println("start", d.Start, "-", d.Message)
	// Output:
	// canary [prod/lille]
	// wave-1 [prod/lyon prod/nice]
	// wave-2 [prod/paris]
	// start [prod/lille] - wave 1 of 3 (canary): 1 upgrading, 0 soaking, 0 succeeded, 0 failed of 4 clusters
}
