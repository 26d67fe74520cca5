package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Spec is what a rollout asks, as Decide reads it.
type Spec struct {
	// Canaries are the keys of the members that go first, in their own
	// wave "canary"; CanaryCount, when Canaries is empty, takes the first
	// members in key order.
	Canaries    []string
	CanaryCount int
	// WaveLabel groups the other members into waves by the value of this
	// label: the values of WaveOrder first, in that order, then the other
	// values sorted, then the members without the label (wave
	// "unlabelled"). Without WaveLabel, the others go in waves of
	// WaveSize (of the whole fleet, rounded up; zero: one wave "fleet"),
	// in key order, named "wave-1", "wave-2", ...
	WaveLabel string
	WaveOrder []string
	WaveSize  Amount
	// MaxConcurrency is how many members may be in flight (upgrading,
	// soaking, or running still after the rollout gave up on them) at
	// once, over the whole fleet (a percentage rounded up); zero means 1.
	MaxConcurrency Amount
	// MaxFailures is the failure budget (a percentage rounded down): once
	// more members have failed, no member starts and the rollout is
	// Failed, reason BudgetExceeded.
	MaxFailures Amount
	// MinSuccessTime is how long a member must stay at the target,
	// available, before it counts as succeeded (soak).
	MinSuccessTime time.Duration
	// ProgressDeadline is how long a member may take from its start to
	// reaching the target; past it, it counts as failed
	// (DeadlineExceeded). Zero: no deadline.
	ProgressDeadline time.Duration
	// Gates are the waves that start only once Approved names them.
	Gates    []string
	Approved []string
	// Paused stops starting members; Aborted too, for good.
	Paused, Aborted bool
	// Windows are the rollout's maintenance windows: a member starts only
	// while they are open (nil: always), and its own too.
	Windows *Calendar
}

// Concurrency is how many of a fleet of n members may be in flight at
// once: MaxConcurrency of n, rounded up, at least 1.
func (s Spec) Concurrency(n int) int { return max(s.MaxConcurrency.Of(n, true), 1) }

// Member is a cluster of the fleet as observed.
type Member struct {
	Key    string
	Labels map[string]string
	// Started is when the rollout set the member's target (zero: not
	// yet).
	Started time.Time
	// AtTarget: its ClusterVersion runs the target, idle; Since is when
	// it became so (available since).
	AtTarget bool
	Since    time.Time
	// Failed: its upgrade to the target failed (Failed phase); Why says
	// how.
	Failed bool
	Why    string
	// RolledBack: the rollout, aborted, asked it to roll back an upgrade
	// that had not failed (completed, or in progress); Why says how far.
	// It is not a failure: it does not count against the budget.
	RolledBack bool
	// Running: its upgrade runs (phase Upgrading, or a run stopping): it
	// counts against the concurrency even when the rollout has given up
	// on it (its deadline passed), until it stops.
	Running bool
	// Windows are the member's own maintenance windows (nil: always).
	Windows *Calendar
}

// State is where a member is in the rollout.
type State string

// The states of a member.
const (
	Pending   State = "Pending"
	Upgrading State = "Upgrading"
	Soaking   State = "Soaking"
	Succeeded State = "Succeeded"
	Failed    State = "Failed"
	// RolledBack: rolled back on the rollout's request (Member.RolledBack).
	RolledBack State = "RolledBack"
)

// Settled reports whether a member in state s is done with the rollout:
// Succeeded, Failed or RolledBack.
func (s State) Settled() bool { return s == Succeeded || s == Failed || s == RolledBack }

// Phase is where the rollout is.
type Phase string

// The phases of a rollout.
const (
	Progressing        Phase = "Progressing"
	WaitingForApproval Phase = "WaitingForApproval"
	WaitingForWindow   Phase = "WaitingForWindow"
	PhasePaused        Phase = "Paused"
	PhaseAborted       Phase = "Aborted"
	PhaseFailed        Phase = "Failed"
	Completed          Phase = "Completed"
)

// Wave is a group of members that start together.
type Wave struct {
	Name    string
	Members []string
}

// MemberStatus is one member's place in the rollout.
type MemberStatus struct {
	Key   string
	Wave  int
	State State
	// Reason says why a member Failed (UpgradeFailed, DeadlineExceeded)
	// or waits (its window: NextWindow says when it opens).
	Reason     string
	NextWindow time.Time
	// InFlight: the member counts against MaxConcurrency now
	// (Decision.InFlight counts these).
	InFlight bool
}

// Counts are the members by state.
type Counts struct {
	Pending, Upgrading, Soaking, Succeeded, Failed, RolledBack int
}

// Decision is what Decide concludes.
type Decision struct {
	Waves   []Wave
	Members []MemberStatus // in key order
	Counts  Counts
	// Start are the keys of the members to start now, in wave and key
	// order.
	Start []string
	// Wave is the index of the wave in progress (len(Waves) when all
	// are done).
	Wave int
	// Failures and Budget: failed members and how many may fail.
	Failures, Budget int
	// InFlight counts the members whose run counts against
	// MaxConcurrency now (upgrading, soaking, or running still after the
	// rollout gave up on them), those of Start not included.
	InFlight int
	Phase    Phase
	// Reason and Message explain the phase (BudgetExceeded, ...).
	Reason, Message string
	// Next is when to decide again if nothing changes before (a soak
	// ends, a deadline passes, a window opens); zero: only on change.
	Next time.Time
}

// Decide says what a rollout does now with its members: their states,
// the waves, which members start, and the rollout's phase. It is a pure
// function of its arguments: the same fleet gives the same decision.
func Decide(spec Spec, members []Member, now time.Time) Decision {
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b Member) int { return cmp.Compare(a.Key, b.Key) })
	d := Decision{Waves: waves(spec, ms)}
	waveOf := map[string]int{}
	for i, w := range d.Waves {
		for _, k := range w.Members {
			waveOf[k] = i
		}
	}
	d.Budget = spec.MaxFailures.Of(len(ms), false)
	for _, m := range ms {
		s := d.state(spec, m, now)
		s.Wave = waveOf[m.Key]
		switch s.State {
		case Pending:
			d.Counts.Pending++
		case Upgrading:
			d.Counts.Upgrading++
			s.InFlight = true
		case Soaking:
			d.Counts.Soaking++
			s.InFlight = true
		case Succeeded:
			d.Counts.Succeeded++
		case Failed:
			d.Counts.Failed++
			s.InFlight = m.Running
		case RolledBack:
			d.Counts.RolledBack++
			s.InFlight = m.Running
		}
		if s.InFlight {
			d.InFlight++
		}
		d.Members = append(d.Members, s)
	}
	d.Failures = d.Counts.Failed
	d.Wave = d.current()
	switch {
	case d.Failures > d.Budget:
		d.Phase, d.Reason = PhaseFailed, "BudgetExceeded"
		d.Message = fmt.Sprintf("%d of %d clusters failed, more than the failure budget of %d (maxFailures %s): no cluster starts; the clusters in flight finish their hop", d.Failures, len(ms), d.Budget, spec.MaxFailures)
		return d
	case spec.Aborted && d.Counts.RolledBack > 0:
		d.Phase, d.Reason = PhaseAborted, "Aborted"
		d.Message = fmt.Sprintf("aborted: no cluster starts; %d rolled back on the rollout's request (spec.rollback), %d upgraded, %d failed of %d clusters", d.Counts.RolledBack, d.Counts.Succeeded, d.Failures, len(ms))
		return d
	case d.Wave == len(d.Waves):
		d.Phase, d.Reason = Completed, "Completed"
		d.Message = fmt.Sprintf("%d of %d clusters upgraded, %d failed (within the budget of %d)", d.Counts.Succeeded, len(ms), d.Failures, d.Budget)
		return d
	case spec.Aborted:
		d.Phase, d.Reason, d.Message = PhaseAborted, "Aborted", "aborted: no cluster starts; the clusters in flight finish their hop"
		return d
	case spec.Paused:
		d.Phase, d.Reason, d.Message = PhasePaused, "Paused", "paused: no cluster starts until spec.paused is cleared"
		return d
	}
	w := d.Waves[d.Wave]
	if slices.Contains(spec.Gates, w.Name) && !slices.Contains(spec.Approved, w.Name) && d.waveUntouched(d.Wave) {
		d.Phase, d.Reason = WaitingForApproval, "WaitingForApproval"
		d.Message = fmt.Sprintf("wave %s (%d clusters) waits for its approval: add {wave: %s, by: NAME} to spec.approvals", w.Name, len(w.Members), w.Name)
		return d
	}
	d.Phase, d.Reason = Progressing, "Progressing"
	slots := spec.Concurrency(len(ms)) - d.InFlight
	waiting := 0
	for i := range d.Members {
		s := &d.Members[i]
		if s.Wave != d.Wave || s.State != Pending || slots <= 0 {
			continue
		}
		if next := (Windows{spec.Windows, ms[i].Windows}).NextOpen(now); !next.Equal(now) {
			s.Reason, s.NextWindow = "WaitingForWindow", next
			waiting++
			d.wake(next)
			continue
		}
		d.Start = append(d.Start, s.Key)
		slots--
	}
	d.Message = fmt.Sprintf("wave %d of %d (%s): %d upgrading, %d soaking, %d succeeded, %d failed of %d clusters", d.Wave+1, len(d.Waves), w.Name,
		d.Counts.Upgrading+len(d.Start), d.Counts.Soaking, d.Counts.Succeeded, d.Failures, len(ms))
	if len(d.Start) == 0 && d.InFlight == 0 && waiting > 0 {
		d.Phase, d.Reason = WaitingForWindow, "WaitingForWindow"
		d.Message += fmt.Sprintf("; %d waiting for a maintenance window, the next opening %s", waiting, d.Next.UTC().Format(time.RFC3339))
	}
	return d
}

// state is m's state at now; it notes in d when it changes by itself
// (a soak ends, a deadline passes).
func (d *Decision) state(spec Spec, m Member, now time.Time) MemberStatus {
	s := MemberStatus{Key: m.Key}
	switch {
	case m.Started.IsZero() && m.AtTarget:
		s.State = Succeeded // at the target before the rollout
	case m.Started.IsZero():
		s.State = Pending
	case m.Failed:
		s.State, s.Reason = Failed, cmp.Or(m.Why, "UpgradeFailed")
	case m.RolledBack:
		s.State, s.Reason = RolledBack, m.Why
	case spec.ProgressDeadline > 0 && m.AtTarget && m.Since.After(m.Started.Add(spec.ProgressDeadline)):
		s.State, s.Reason = Failed, "DeadlineExceeded" // it got there, too late: failed it stays
	case m.AtTarget && now.Before(m.Since.Add(spec.MinSuccessTime)):
		s.State = Soaking
		d.wake(m.Since.Add(spec.MinSuccessTime))
	case m.AtTarget:
		s.State = Succeeded
	case spec.ProgressDeadline > 0 && !now.Before(m.Started.Add(spec.ProgressDeadline)):
		s.State, s.Reason = Failed, "DeadlineExceeded"
	default:
		s.State = Upgrading
		if spec.ProgressDeadline > 0 {
			d.wake(m.Started.Add(spec.ProgressDeadline))
		}
	}
	return s
}

// wake notes that the decision changes by itself at t.
func (d *Decision) wake(t time.Time) {
	if !t.IsZero() && (d.Next.IsZero() || t.Before(d.Next)) {
		d.Next = t
	}
}

// current is the first wave with a member not yet settled: the waves
// after it wait.
func (d *Decision) current() int {
	open := len(d.Waves)
	for _, s := range d.Members {
		if !s.State.Settled() {
			open = min(open, s.Wave)
		}
	}
	return open
}

// waveUntouched reports whether no member of wave i has started.
func (d *Decision) waveUntouched(i int) bool {
	for _, s := range d.Members {
		if s.Wave == i && s.State != Pending {
			return false
		}
	}
	return true
}

// waves groups ms (in key order) as spec says.
func waves(spec Spec, ms []Member) []Wave {
	var out []Wave
	taken := map[string]bool{}
	canaries := spec.Canaries
	if len(canaries) == 0 && spec.CanaryCount > 0 {
		for _, m := range ms[:min(spec.CanaryCount, len(ms))] {
			canaries = append(canaries, m.Key)
		}
	}
	var cw Wave
	for _, k := range canaries {
		if slices.ContainsFunc(ms, func(m Member) bool { return m.Key == k }) && !taken[k] {
			cw.Members = append(cw.Members, k)
			taken[k] = true
		}
	}
	if len(cw.Members) > 0 {
		cw.Name = "canary"
		out = append(out, cw)
	}
	var rest []Member
	for _, m := range ms {
		if !taken[m.Key] {
			rest = append(rest, m)
		}
	}
	if len(rest) == 0 {
		return out
	}
	if spec.WaveLabel != "" {
		groups := map[string][]string{}
		var unlabelled []string
		for _, m := range rest {
			v, ok := m.Labels[spec.WaveLabel]
			if !ok {
				unlabelled = append(unlabelled, m.Key)
				continue
			}
			groups[v] = append(groups[v], m.Key)
		}
		values := slices.Clone(spec.WaveOrder)
		var others []string
		for v := range groups {
			if !slices.Contains(values, v) {
				others = append(others, v)
			}
		}
		slices.Sort(others)
		for _, v := range append(values, others...) {
			if len(groups[v]) > 0 {
				out = append(out, Wave{Name: v, Members: groups[v]})
			}
		}
		if len(unlabelled) > 0 {
			out = append(out, Wave{Name: "unlabelled", Members: unlabelled})
		}
		return out
	}
	size := spec.WaveSize.Of(len(ms), true)
	if size <= 0 {
		return append(out, Wave{Name: "fleet", Members: keys(rest)})
	}
	for i, n := 0, 1; i < len(rest); i, n = i+size, n+1 {
		out = append(out, Wave{Name: fmt.Sprintf("wave-%d", n), Members: keys(rest[i:min(i+size, len(rest))])})
	}
	return out
}

func keys(ms []Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Key
	}
	return out
}
