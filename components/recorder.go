package components

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/hopdag/hopdag/release"
)

// Recorder is an in-memory Applier for tests and dry runs: it records every
// apply and delete, object by object, in the order they happen, and keeps
// the set of objects that are live (applied and not deleted since).
//
// It is an InventoryStore (in memory), so Manifest prunes through it, and
// its Delete leaves objects another component has taken over. Its Apply
// checks ownership as every Applier of the module does (CheckOwner): an
// object live with another component's or instance's labels is refused
// with an *OwnerError, unless WithTakeOver; one live without them is
// adopted, its Action's Reason saying so.
//
// It is also a ReadyChecker: a health check is ready at once, unless
// ReadyAfter scripts it.
//
// The zero Recorder is ready to use. It is safe for concurrent use; when
// components run in parallel, the order of their actions in the log is the
// order the calls happened.
type Recorder struct {
	cfg     applierConfig
	mu      sync.Mutex
	actions []Action
	live    map[objectKey]Object
	script  map[string]int
	polls   map[string]int
	invs    map[[2]string]Inventory // by instance and component
}

// Action is one recorded apply or delete of one object.
type Action struct {
	// Verb is "apply", "delete", or "skip": a delete that left a Namespace
	// or CustomResourceDefinition in place because deleting it would delete
	// live objects with it (see Manifest, step 5).
	Verb    string
	Object  Object
	Options ApplyOptions // zero for a delete
	// Reason is set on an apply that adopted an object without ownership
	// labels, or took over another owner's (see CheckOwner), and on a
	// skip: what the object holds.
	Reason string
}

// String is "component version: verb Kind namespace/name (reason)".
func (a Action) String() string {
	s := a.Verb + " " + a.Object.String()
	if a.Object.Component != "" {
		s = a.Object.Component + " " + a.Object.Version + ": " + s
	}
	if a.Reason != "" {
		s += " (" + a.Reason + ")"
	}
	return s
}

// NewRecorder returns an empty Recorder; the options are WithTakeOver and
// WithReporter.
func NewRecorder(opts ...ApplierOption) *Recorder {
	return &Recorder{cfg: newApplierConfig(opts)}
}

// Apply records an apply of each object and makes it live, in order. An
// object CheckOwner refuses (live with another owner's labels) stops it
// with the *OwnerError: that object and the ones after it are neither
// recorded nor made live.
func (r *Recorder) Apply(ctx context.Context, objs []Object, opts ApplyOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live == nil {
		r.live = map[objectKey]Object{}
	}
	for _, o := range objs {
		var reason string
		if live, ok := r.live[o.key()]; ok {
			var err error
			if reason, err = CheckOwner(o, labelsOf(live.Content), r.cfg.takeOver); err != nil {
				return err
			}
		}
		a := Action{Verb: "apply", Object: o, Options: opts, Reason: reason}
		r.actions = append(r.actions, a)
		r.live[o.key()] = o
		r.cfg.emit(a)
	}
	return nil
}

// Delete records a delete of each object and removes it from the live
// set. A live object whose labels say it belongs to another component than
// o's ownership labels (see Owner) is left alone and not recorded.
func (r *Recorder) Delete(ctx context.Context, objs []Object) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range objs {
		live, ok := r.live[o.key()]
		if inst, comp, owned := Owner(o); ok && owned && !OwnedBy(labelsOf(live.Content), inst, comp) {
			continue
		}
		if hs := r.holds(o, live); len(hs) > 0 {
			a := Action{Verb: "skip", Object: o, Reason: keepReason(hs)}
			r.actions = append(r.actions, a)
			r.cfg.emit(a)
			continue
		}
		a := Action{Verb: "delete", Object: o}
		r.actions = append(r.actions, a)
		delete(r.live, o.key())
		r.cfg.emit(a)
	}
	return nil
}

// holds returns the live objects, other than o, that deleting o (live as
// live) would delete with it (see cascade).
func (r *Recorder) holds(o, live Object) []held {
	in, ok := cascade(o.Ref(), live.Content)
	if !ok {
		return nil
	}
	var hs []held
	for k, x := range r.live {
		if k != o.key() && in(x.Ref()) {
			hs = append(hs, held{ref: x.Ref(), labels: labelsOf(x.Content)})
		}
	}
	return hs
}

// Inventories returns the inventories of instance saved with
// SaveInventory, sorted by component.
func (r *Recorder) Inventories(ctx context.Context, instance string) ([]Inventory, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Inventory
	for k, inv := range r.invs {
		if k[0] == instance {
			inv.Objects = slices.Clone(inv.Objects)
			out = append(out, inv)
		}
	}
	slices.SortFunc(out, func(a, b Inventory) int { return cmp.Compare(a.Component, b.Component) })
	return out, nil
}

// SaveInventory keeps inv, replacing the component's previous one.
func (r *Recorder) SaveInventory(ctx context.Context, inv Inventory) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.invs == nil {
		r.invs = map[[2]string]Inventory{}
	}
	inv.Objects = slices.Clone(inv.Objects)
	r.invs[[2]string{inv.Instance, inv.Component}] = inv
	return nil
}

// Actions returns a copy of the log.
func (r *Recorder) Actions() []Action {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.actions)
}

// Live returns the objects applied and not deleted since, sorted by group,
// kind, namespace and name.
func (r *Recorder) Live() []Object {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Object, 0, len(r.live))
	for _, o := range r.live {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Object) int { return compareRefs(a.Ref(), b.Ref()) })
	return out
}

// ReadyAfter scripts the health check named check: its first n polls
// report not ready, later ones ready; n < 0 never reports ready. Polls are
// counted per check name, over every component. It returns r, so that
// calls chain.
func (r *Recorder) ReadyAfter(check string, n int) *Recorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.script == nil {
		r.script = map[string]int{}
	}
	r.script[check] = n
	return r
}

// Ready reports whether the health check is ready (see ReadyAfter).
func (r *Recorder) Ready(ctx context.Context, check release.HealthCheck, objs []Object) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.polls == nil {
		r.polls = map[string]int{}
	}
	r.polls[check.Name]++
	n, scripted := r.script[check.Name]
	switch {
	case !scripted:
		return true, nil
	case n < 0:
		return false, nil
	}
	return r.polls[check.Name] > n, nil
}

// Polls returns how many times the health check named check was polled.
func (r *Recorder) Polls(check string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.polls[check]
}
