package runnertest

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/runner"
)

// satisfied reports whether the attempt ended so that its dependents may
// run: it succeeded, or its runner skipped it (runner.Skip).
func (r Record) satisfied() bool {
	return r.End > 0 && (r.Err == nil || errors.Is(r.Err, runner.ErrSkipped))
}

// CheckOrder reports every attempt on hop that started before a dependency
// of its component had ended successfully (or been skipped by its runner,
// which lets dependents run).
func CheckOrder(g *dag.Graph, hop int, recs []Record) error {
	okEnd := map[string]int{} // component -> end of its first satisfying attempt
	for _, r := range recs {
		if _, seen := okEnd[r.Component]; !seen && r.Hop == hop && r.satisfied() {
			okEnd[r.Component] = r.End
		}
	}
	var errs []error
	for _, r := range recs {
		if r.Hop != hop {
			continue
		}
		i, ok := g.Index(r.Component)
		if !ok {
			errs = append(errs, fmt.Errorf("%s ran but is not in the graph", r.Component))
			continue
		}
		for _, d := range g.Deps(i) {
			dep := g.Node(d).Name
			end, done := okEnd[dep]
			if !done || end > r.Start {
				errs = append(errs, fmt.Errorf("%s attempt %d started (seq %d) before its dependency %s succeeded (seq %d)", r.Component, r.Attempt, r.Start, dep, end))
			}
		}
	}
	return errors.Join(errs...)
}

// CheckParallelism reports whether more than limit attempts overlapped
// among the records that match (nil matches all).
func CheckParallelism(recs []Record, limit int, match func(Record) bool) error {
	type ev struct{ at, delta int }
	var evs []ev
	for _, r := range recs {
		if match != nil && !match(r) {
			continue
		}
		end := r.End
		if end == 0 {
			end = int(^uint(0) >> 1) // still running
		}
		evs = append(evs, ev{r.Start, +1}, ev{end, -1})
	}
	// Sequence numbers are unique, so sorting by position is exact.
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Compare(a.at, b.at) })
	cur, peak := 0, 0
	for _, e := range evs {
		cur += e.delta
		peak = max(peak, cur)
	}
	if peak > limit {
		return fmt.Errorf("%d attempts ran at once, limit %d", peak, limit)
	}
	return nil
}

// CheckSucceededOnce reports every component of hop that succeeded (or was
// skipped by its runner) more than once in the records: one that ran
// again after it was done.
func CheckSucceededOnce(hop int, recs []Record) error {
	n := map[string]int{}
	for _, r := range recs {
		if r.Hop == hop && r.satisfied() {
			n[r.Component]++
		}
	}
	var errs []error
	for _, c := range slices.Sorted(maps.Keys(n)) {
		if n[c] > 1 {
			errs = append(errs, fmt.Errorf("%s succeeded %d times", c, n[c]))
		}
	}
	return errors.Join(errs...)
}
