package runner

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/hopdag/hopdag/record"
)

// Preparation. Everything Execute decides before the first component
// starts happens here, in one pass, in this order: the policy of a
// resumed run (recordedPolicy), the plan's problems (Validate: the
// runner's, the checks', the step names', WithUntil's, the rollback
// abilities'), whether the previous status can be resumed (checkResume,
// checkSource) or the new run's status (NewStatus), the Until step
// (resolveUntil), the gates (resolveGates), and the status as the run
// starts (begin). The result, a prepared, is all the run reads of the
// executor's options and the plan's names: the plan flows one way, from
// here to the run (run.go), its hops (hop.go) and their scheduler
// (schedule.go).

// prepared is a plan made ready to run by prepare.
type prepared struct {
	// e is the executor, with the recorded policy when a run is
	// resumed without WithFailurePolicy.
	e    *Executor
	plan *Plan
	// s is the run's status: a copy of the previous one, or NewStatus's.
	s *record.Status
	// done says the previous status had succeeded: s is final, nothing
	// runs, and nothing below is set.
	done bool
	// until is WithUntil's step on plan; nil runs to the end.
	until *untilStep
	// started is when this Execute call began (Status.StartedAt is the
	// first run's): PlanFinished's Duration counts from it.
	started time.Time
	// rnd jitters backoffs, seeded by the executor's seed and the
	// number of earlier runs of the status.
	rnd *rand.Rand
}

// prepare checks p (and prev, when resuming) and returns the run's
// prepared form, its status Running. On error, see refused for the
// status Execute returns with it.
//
// It returns the prepared form by value, for the run to embed: one
// allocation per Execute fewer (BenchmarkRollback counts them).
func (e *Executor) prepare(p *Plan, prev *record.Status) (prepared, error) {
	if prev != nil && (!e.policySet || requestedRollback(prev)) {
		// A resumed run keeps the policy it started with: a rollback
		// stopped halfway goes on as far as that policy says. A
		// rollback asked for (Revert) goes back to the run's start
		// whatever the executor's policy, which is about failures.
		pol, err := recordedPolicy(prev.FailurePolicy)
		if err != nil {
			return prepared{}, err
		}
		resumed := *e
		resumed.policy = pol
		e = &resumed
	}
	if err := e.Validate(p); err != nil {
		return prepared{}, err
	}
	pr := prepared{e: e, plan: p}
	if prev != nil {
		if err := checkResume(p, prev); err != nil {
			return prepared{}, err
		}
		pr.s = prev.DeepCopy()
		pr.s.Catalog = p.Catalog // the same digest, maybe another ref (see record.CatalogSource)
		if pr.done = pr.s.Phase == record.Succeeded; pr.done {
			return pr, nil
		}
	} else {
		pr.s = NewStatus(p)
	}
	var err error
	if pr.until, err = e.resolveUntil(p); err != nil {
		return prepared{}, err
	}
	if pr.s.Gates, err = e.resolveGates(p, pr.s); err != nil {
		return prepared{}, err
	}
	pr.s.FailurePolicy = e.policy.record()
	pr.begin(e.clock.Now())
	return pr, nil
}

// refused is the status Execute returns with prepare's error err: none
// for a problem of the plan or the options (ErrInvalidPlan), else (a
// previous status that cannot be resumed) a copy of prev.
func refused(prev *record.Status, err error) *record.Status {
	if errors.Is(err, ErrInvalidPlan) {
		return nil
	}
	return prev.DeepCopy()
}

// begin records in the status that a run starts at now: one more run,
// Running, the progress and order of its components, and nothing waiting
// (what still waits says so again).
func (pr *prepared) begin(now time.Time) {
	s := pr.s
	pr.started = now
	pr.rnd = rand.New(rand.NewPCG(pr.e.seed, uint64(s.Runs)))
	s.Runs++
	s.Phase, s.Code, s.Message, s.FinishedAt = record.Running, "", "", time.Time{}
	if s.StartedAt.IsZero() {
		s.StartedAt = now
	}
	s.Progress = progressOf(s)
	s.Waiting = nil
	pr.recordOrder()
	if s.Runs > 1 && !resumesRollback(s) {
		// A resumed run that succeeds must not keep the failure of the
		// run it resumed; it is set again if something fails. A resumed
		// rollback keeps it: it is why the run is rolled back, and its
		// final message and error say so (rollback.go).
		s.LastFailure = nil
	}
}

// recordOrder records each component's place in its hop's batch order
// (ComponentStatus.Order), also in a status written before it was.
func (pr *prepared) recordOrder() {
	for i, h := range pr.plan.Hops {
		for k, name := range slices.Concat(h.Batches()...) {
			if j, ok := h.Graph.Index(name); ok {
				pr.s.Hops[i].Components[j].Order = k + 1
			}
		}
	}
}

// recordedPolicy parses a Status's FailurePolicy (see record).
func recordedPolicy(s string) (FailurePolicy, error) {
	switch s {
	case "", ContinueIndependent.String():
		return ContinueIndependent, nil
	case FailFast.String():
		return FailFast, nil
	case Rollback.String():
		return Rollback, nil
	case RollbackRun.String():
		return RollbackRun, nil
	}
	var n int
	if _, err := fmt.Sscanf(s, "max-failures(%d)", &n); err == nil && n > 1 && MaxFailures(n).String() == s {
		return MaxFailures(n), nil
	}
	return FailurePolicy{}, fmt.Errorf("%w: the status records failure policy %q, which this hopdag does not know (it knows continue-independent, fail-fast, max-failures(N), rollback and rollback-run): resume it with the hopdag that wrote it",
		ErrPlanMismatch, s)
}

// NewStatus returns the Pending status of a plan, as Execute starts it.
func NewStatus(p *Plan) *record.Status {
	// Hops is never nil: the status of a plan with no hops serialises
	// "hops": [].
	s := &record.Status{Phase: record.Pending, Track: p.Route.Track, From: p.Route.From.Original(), To: p.Route.To.Original(), Catalog: p.Catalog, Hops: []record.HopStatus{}}
	if p.Route.FromState != nil { // a route across tracks
		s.Track, s.From, s.To = "", p.Route.FromState.String(), p.Route.ToState.String()
	}
	for _, h := range p.Hops {
		hs := record.HopStatus{Track: h.Track, From: h.From.Original(), To: h.To.Original(), Phase: record.Pending, Components: make([]record.ComponentStatus, h.Graph.Len())}
		for i := range hs.Components {
			n := h.Graph.Node(i)
			cs := &hs.Components[i]
			cs.Name, cs.Phase = n.Name, record.Pending
			if n.From != nil {
				cs.FromVersion = n.From.Version.Original()
			}
			if n.To != nil {
				cs.ToVersion = n.To.Version.Original()
			}
		}
		s.Hops = append(s.Hops, hs)
	}
	s.Progress.Total = p.Total()
	return s
}

// checkResume returns why prev cannot be resumed with p, or nil.
func checkResume(p *Plan, prev *record.Status) error {
	if prev.Phase == record.RolledBack {
		return fmt.Errorf("%w: %s -> %s was rolled back (%s); start a new run with an empty status", ErrRolledBack, prev.From, prev.To, prev.Message)
	}
	if prev.Phase == record.Abandoned {
		return fmt.Errorf("%w: %s -> %s was abandoned (%s); start a new run with an empty status", ErrAbandoned, prev.From, prev.To, prev.Message)
	}
	if err := checkSource(prev.Catalog, p.Catalog); err != nil {
		return err
	}
	fresh := NewStatus(p)
	var diffs []string
	if prev.Track != fresh.Track || prev.From != fresh.From || prev.To != fresh.To {
		diffs = append(diffs, fmt.Sprintf("status is for %s -> %s, plan is %s -> %s", prev.From, prev.To, fresh.From, fresh.To))
	} else if len(prev.Hops) != len(fresh.Hops) {
		diffs = append(diffs, fmt.Sprintf("status has %d hops, plan has %d", len(prev.Hops), len(fresh.Hops)))
	} else {
		for i := range fresh.Hops {
			ph, fh := prev.Hops[i], fresh.Hops[i]
			if ph.Track != fh.Track || ph.From != fh.From || ph.To != fh.To {
				diffs = append(diffs, fmt.Sprintf("hop %d is %s -> %s in the status, %s -> %s in the plan", i+1, ph.From, ph.To, fh.From, fh.To))
				continue
			}
			names := func(cs []record.ComponentStatus) []string {
				out := make([]string, len(cs))
				for j, c := range cs {
					out[j] = c.Name + "@" + c.ToVersion
				}
				return out
			}
			if a, b := names(ph.Components), names(fh.Components); !slices.Equal(a, b) {
				diffs = append(diffs, fmt.Sprintf("hop %d components differ: status has %s, plan has %s", i+1, strings.Join(a, " "), strings.Join(b, " ")))
				continue
			}
			// The same components to the same versions, from others: the
			// plan's Task.From would not be what the status says it
			// upgrades from (and a rollback would go back elsewhere).
			start := fh.From
			if fh.Track != "" {
				start = fh.Track + " " + fh.From
			}
			for j, pc := range ph.Components {
				if fc := fh.Components[j]; pc.FromVersion != fc.FromVersion {
					diffs = append(diffs, fmt.Sprintf("hop %d: %s is upgraded from %s in the status, from %s in the plan (the catalog changed what %s ships)",
						i+1, fc.Name, orNone(pc.FromVersion), orNone(fc.FromVersion), start))
				}
			}
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w: %s; resume with the plan this status was written for, or start over with no previous status (for a state store: a new one)", ErrPlanMismatch, strings.Join(diffs, "; "))
	}
	return nil
}

// Validate reports, all at once and sorted, every component of p that e's
// runner refuses (when it implements Validator), every hop it refuses (when
// it implements HopValidator) and every hop check that has no function
// registered with WithCheck, hops that share a step name (a plan built by
// hand; see StepName), and a WithUntil step the plan does not have.
// Execute calls it before running. The runner's
// own errors stay in the chain (errors.Is and errors.As find them).
func (e *Executor) Validate(p *Plan) error {
	var problems []error
	if e.runner == nil {
		problems = append(problems, errors.New("runner.New(nil): the executor has no Runner; pass one (a components.Router, a RunnerFunc)"))
	}
	for name, fn := range e.checks {
		if fn == nil {
			problems = append(problems, fmt.Errorf("WithCheck(%q, nil): check %s has a nil function; pass the CheckFunc that runs it", name, name))
		}
	}
	v, _ := e.runner.(Validator)
	hv, _ := e.runner.(HopValidator)
	for i, h := range p.Hops {
		for j := 0; j < h.Graph.Len(); j++ {
			n := h.Graph.Node(j)
			if v != nil && n.To != nil {
				if err := v.Validate(n.To); err != nil {
					problems = append(problems, fmt.Errorf("hop %d %s: component %s: %w", i+1, h.Name(), n.Name, err))
				}
			}
		}
		if hv != nil {
			if err := hv.ValidateHop(h); err != nil {
				problems = append(problems, fmt.Errorf("hop %d %s: %w", i+1, h.Name(), err))
			}
		}
		for _, c := range slices.Concat(h.PreChecks, h.PostChecks) {
			if _, ok := e.checks[c.Name]; !ok {
				problems = append(problems, fmt.Errorf("hop %d %s: check %s has no function registered (registered: %s)", i+1, h.Name(), c.Name, e.checkNames()))
			}
		}
	}
	problems = append(problems, sameStepNames(p)...)
	if _, err := e.untilStep(p); err != nil {
		problems = append(problems, err)
	}
	rollback := e.validateRollback(p) // rollback.go
	if len(problems) == 0 && len(rollback) == 0 {
		return nil
	}
	problems = append(problems, rollback...)
	slices.SortStableFunc(problems, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	problems = slices.CompactFunc(problems, func(a, b error) bool { return a.Error() == b.Error() })
	return fmt.Errorf("%w: %w", ErrInvalidPlan, errors.Join(problems...))
}

// sameStepNames reports the hops of p that share a step name (StepName),
// in the order of their first hop: a gate, an approval or WithUntil could
// not tell them apart. Only a plan built by hand has them: NewPlan names
// hops to versions spelled alike TRACK=VERSION.
func sameStepNames(p *Plan) []error {
	byName := map[string][]int{}
	var names []string
	for i, h := range p.Hops {
		name := StepName(h, "", "")
		if len(byName[name]) == 0 {
			names = append(names, name)
		}
		byName[name] = append(byName[name], i)
	}
	var errs []error
	for _, name := range names {
		hops := byName[name]
		if len(hops) < 2 {
			continue
		}
		labels := make([]string, len(hops))
		qualified := make([]string, len(hops))
		tracks := map[string]bool{}
		for k, i := range hops {
			h := p.Hops[i]
			labels[k] = fmt.Sprintf("hop %d %s", i+1, hopLabel(h))
			qualified[k] = h.Track + "=" + h.To.Original()
			tracks[h.Track] = true
		}
		fix := fmt.Sprintf("build the plan with NewPlan, which names such hops TRACK=VERSION (%s)", strings.Join(qualified, ", "))
		if len(tracks) < len(hops) {
			fix = "a plan goes to each version of a track once: remove the hops that go there again"
		}
		errs = append(errs, fmt.Errorf("%s have the same step name %s, which gates, approvals and WithUntil could not tell apart; name them apart: %s",
			andList(labels), name, fix))
	}
	return errs
}

// andList is "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

func (e *Executor) checkNames() string {
	names := make([]string, 0, len(e.checks))
	for n := range e.checks {
		names = append(names, n)
	}
	if len(names) == 0 {
		return "none"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// resolveGates checks the executor's gates against p and returns s's
// gates with them, sorted, once each.
func (e *Executor) resolveGates(p *Plan, s *record.Status) ([]string, error) {
	gates := slices.Clone(s.Gates)
	for _, step := range e.gates {
		hop, component, sub := strings.Cut(step, "/")
		switch {
		case strings.Contains(component, "/"):
			return nil, fmt.Errorf("%w: gate %s: a gate added at run time is on a hop (HOP) or a component (HOP/COMPONENT); a phase's gate is declared in the catalog (gate: on the phase, in the ComponentVersion's spec.phases)", ErrInvalidPlan, step)
		case sub && component == "":
			return nil, fmt.Errorf("%w: gate %s: empty component; write HOP or HOP/COMPONENT", ErrInvalidPlan, step)
		}
		i, err := hopOf(p, hop, component)
		if err != nil {
			return nil, fmt.Errorf("%w: gate %s: %w", ErrInvalidPlan, step, err)
		}
		// Recorded as the step is named when it waits (TRACK=VERSION for
		// a hop that has a twin), whichever way it was written.
		gates = append(gates, StepName(p.Hops[i], component, ""))
	}
	slices.Sort(gates)
	return slices.Compact(gates), nil
}

// resolveUntil resolves the executor's until step against p; a step p
// does not have is ErrInvalidPlan. Validate reports the same problem.
func (e *Executor) resolveUntil(p *Plan) (*untilStep, error) {
	u, err := e.untilStep(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPlan, err)
	}
	return u, nil
}

// untilStep is resolveUntil without the ErrInvalidPlan wrapping.
func (e *Executor) untilStep(p *Plan) (*untilStep, error) {
	if e.until == "" {
		return nil, nil
	}
	parts := strings.SplitN(e.until, "/", 3)
	u := &untilStep{name: e.until, hop: -1}
	if len(parts) > 1 && parts[1] == "" {
		return nil, fmt.Errorf("until %s: empty component; write HOP, HOP/COMPONENT or HOP/COMPONENT/PHASE", e.until)
	}
	component := ""
	if len(parts) > 1 {
		component = parts[1]
	}
	hop, err := hopOf(p, parts[0], component)
	if err != nil {
		return nil, fmt.Errorf("until %s: %w", e.until, err)
	}
	u.hop = hop
	if len(parts) == 1 {
		return u, nil
	}
	g := p.Hops[u.hop].Graph
	c, _ := g.Index(parts[1])
	u.component = parts[1]
	if len(parts) == 3 {
		if parts[2] == "" {
			return nil, fmt.Errorf("until %s: empty phase; write HOP/COMPONENT/PHASE", e.until)
		}
		if err := checkPhase(g.Node(c).To, parts[2]); err != nil {
			return nil, fmt.Errorf("until %s: %s", e.until, err.Error())
		}
		u.phase = parts[2]
	}
	u.allowed = make([]bool, g.Len())
	u.allowed[c] = true
	for _, a := range g.Ancestors(c) {
		u.allowed[a] = true
	}
	return u, nil
}

// validateRollback lists the components of p that may be rolled back
// and that e's runner cannot roll back.
func (e *Executor) validateRollback(p *Plan) []error {
	var problems []error
	rb, _ := e.runner.(Rollbacker)
	rv, _ := e.runner.(RollbackValidator)
	for i, h := range p.Hops {
		if !e.rollsBack(h) && e.policy.rollback != rollbackRun {
			continue
		}
		for j := 0; j < h.Graph.Len(); j++ {
			n := h.Graph.Node(j)
			if n.To == nil || n.To.Irreversible != "" {
				continue
			}
			switch {
			case rb == nil:
				problems = append(problems, fmt.Errorf("hop %d %s: component %s: %w: the runner (%T) has no Rollback method; use a runner that implements runner.Rollbacker, mark the component irreversible, or choose another failure policy", i+1, h.Name(), n.Name, ErrCannotRollBack, e.runner))
			case rv != nil:
				if err := rv.ValidateRollback(n.To); err != nil {
					problems = append(problems, fmt.Errorf("hop %d %s: component %s: %w: %w", i+1, h.Name(), n.Name, ErrCannotRollBack, err))
				}
			}
		}
	}
	return problems
}

// checkSource returns why a status made from prev cannot be resumed with a
// plan made from cur, or nil. See CatalogSource.
func checkSource(prev, cur record.CatalogSource) error {
	if prev.Digest == "" || prev.Digest == cur.Digest {
		return nil
	}
	how := fmt.Sprintf("resume with the bundle pinned by digest (%s), or start over with no previous status", pinned(prev.Ref, prev.Digest))
	switch {
	case cur.Digest == "":
		return fmt.Errorf("%w: this run started from catalog bundle %s (%s) and the plan's catalog is a directory, which has no digest to compare; %s",
			ErrPlanMismatch, prev.Ref, prev.Digest, how)
	case prev.Ref == cur.Ref:
		return fmt.Errorf("%w: catalog %s was %s when this run started and is %s now; %s",
			ErrPlanMismatch, prev.Ref, prev.Digest, cur.Digest, how)
	default:
		return fmt.Errorf("%w: catalog %s (%s) is not the bundle this run started from, %s (%s); %s",
			ErrPlanMismatch, cur.Ref, cur.Digest, prev.Ref, prev.Digest, how)
	}
}

// pinned is ref with its digest, if it has one, replaced by digest: the
// '@' of a digest is the last one, with no '/' after it.
func pinned(ref, digest string) string {
	if i := strings.LastIndex(ref, "@"); i >= 0 && !strings.Contains(ref[i:], "/") {
		ref = ref[:i]
	}
	return ref + "@" + digest
}
