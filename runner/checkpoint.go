package runner

import (
	"cmp"
	"context"
	"slices"

	"github.com/hopdag/hopdag/record"
)

// Checkpointer records the status durably.
//
// When Execute calls it: at the start and end of the run and of each hop,
// after each hop check, and, while components run, once per round of the
// scheduler: the transitions that arrived while the previous checkpoint
// was being written (attempts that ended, components started, dependents
// skipped) are recorded together in the next one (group commit). A
// component's runner is invoked only once the checkpoint that shows it
// Running has returned (write-ahead), so a crash never loses a success or
// hides a start; many starts share one checkpoint.
//
// It is called from one goroutine, with a status that is valid only during
// the call (copy or serialise it), and with a context that is not
// cancelled when the run is, so that a cancelled run is recorded too.
//
// An error halts the run at once: running attempts see their ctx done,
// backoff waits end, nothing new starts, and the status says
// CHECKPOINT_FAILED. The Checkpointer is not called again until the run
// has stopped; then it is called once more with the final status (the
// final checkpoint), so that what finished meanwhile is recorded if the
// store answers again. A Checkpointer that wants to ride out a transient
// error retries inside Checkpoint (state.Checkpointer retries within the
// lease's TTL). A panic in Checkpoint is recovered and treated as an
// error (a *PanicError).
type Checkpointer interface {
	Checkpoint(ctx context.Context, s *record.Status) error
}

// ChangeCheckpointer is an optional ability of a Checkpointer: it records
// only what changed. Execute calls CheckpointChanges instead of Checkpoint
// with the components whose records changed since the last checkpoint
// that returned nil, sorted by hop, then index. The run's own fields and
// the hops' own fields (everything but Components) may have changed in
// any checkpoint: record them every time (they do not grow with the
// number of components). The first checkpoint of every Execute call lists
// every component, so a store never keeps a record Execute did not write.
type ChangeCheckpointer interface {
	Checkpointer
	CheckpointChanges(ctx context.Context, s *record.Status, changed []record.Ref) error
}

// CheckpointFunc adapts a function to Checkpointer.
//
// Wrapping a ChangeCheckpointer in one (to count, time or log
// checkpoints) hides its CheckpointChanges from Execute, which then calls
// Checkpoint; pass the ctx and the status on unchanged, and the wrapped
// checkpointer still records only what changed: Execute puts the changes
// in the ctx ([Changes]), and state.Checkpointer reads them there. A
// wrapper that passes another ctx (one not derived from Execute's) or
// another status (a copy) makes every checkpoint a whole status, which
// grows with the run: quadratic in bytes over the run.
type CheckpointFunc func(ctx context.Context, s *record.Status) error

// Checkpoint calls f(ctx, s).
func (f CheckpointFunc) Checkpoint(ctx context.Context, s *record.Status) error { return f(ctx, s) }

// changes tracks the component records changed since the last
// checkpoint that succeeded.
type changes struct {
	marked  [][]bool // by hop, by component
	changed []record.Ref
}

func (c *changes) init(s *record.Status) {
	c.marked = make([][]bool, len(s.Hops))
	for h := range s.Hops {
		c.marked[h] = make([]bool, len(s.Hops[h].Components))
	}
	c.changed = c.changed[:0]
}

func (c *changes) mark(hop, i int) {
	if c.marked == nil || c.marked[hop][i] {
		return
	}
	c.marked[hop][i] = true
	c.changed = append(c.changed, record.Ref{Hop: hop, Component: i})
}

func (c *changes) markAll() {
	for h := range c.marked {
		for i := range c.marked[h] {
			c.mark(h, i)
		}
	}
}

// sorted returns the changed records in (hop, index) order.
func (c *changes) sorted() []record.Ref {
	slices.SortFunc(c.changed, func(a, b record.Ref) int {
		return cmp.Or(cmp.Compare(a.Hop, b.Hop), cmp.Compare(a.Component, b.Component))
	})
	return c.changed
}

func (c *changes) reset() {
	for _, r := range c.changed {
		c.marked[r.Hop][r.Component] = false
	}
	c.changed = c.changed[:0]
}

// changesKey is the context key of the changes Execute passes to a
// Checkpointer's Checkpoint.
type changesKey struct{}

// changesOf is what changed in the status s.
type changesOf struct {
	s       *record.Status
	changed []record.Ref
}

// Changes returns what a ChangeCheckpointer would be told in a call of
// Checkpoint(ctx, s) that Execute made: the component records that
// changed since the last checkpoint that returned nil, sorted by hop,
// then index (every component in the first of each Execute call); ok is
// false when ctx does not carry them for s (a call Execute did not make,
// a ctx not derived from Execute's, or another status than the one
// Execute passed, such as a copy). So a ChangeCheckpointer wrapped in a
// plain Checkpointer (a CheckpointFunc that counts or logs, then calls
// the wrapped one's Checkpoint with its ctx and s) can still record only
// what changed, by checking Changes in its Checkpoint. As with
// CheckpointChanges, the slice is valid only during the call.
func Changes(ctx context.Context, s *record.Status) (changed []record.Ref, ok bool) {
	c, ok := ctx.Value(changesKey{}).(changesOf)
	if !ok || c.s != s || s == nil {
		return nil, false
	}
	return c.changed, true
}
