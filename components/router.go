package components

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// Router is a runner.Runner that hands each task to the runner registered
// for its component type (ComponentVersion.Type). It implements
// runner.Validator, so runner.NewPlan with runner.ForExecutor refuses, at
// plan time, a component whose type has no runner or whose runner refuses it
// (an inline handler nobody registered, a manifest template that does not
// parse).
//
// The zero Router routes nothing; Register adds types. Register and Run may
// be called concurrently, though registering everything before the first run
// is the usual shape.
type Router struct {
	mu      sync.RWMutex
	runners map[string]runner.Runner
}

// NewRouter returns an empty Router.
func NewRouter() *Router { return &Router{} }

// Register routes components of componentType to rn and returns r, so that
// calls chain. It panics when componentType is empty, rn is nil or the type
// is already registered: these are programming errors, as in
// http.ServeMux.Handle.
func (r *Router) Register(componentType string, rn runner.Runner) *Router {
	if componentType == "" {
		panic("components: Router.Register with an empty component type")
	}
	if rn == nil {
		panic(fmt.Sprintf("components: Router.Register(%q) with a nil runner", componentType))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.runners[componentType]; dup {
		panic(fmt.Sprintf("components: component type %q registered twice", componentType))
	}
	if r.runners == nil {
		r.runners = map[string]runner.Runner{}
	}
	r.runners[componentType] = rn
	return r
}

// Types returns the registered component types, sorted.
func (r *Router) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	types := make([]string, 0, len(r.runners))
	for t := range r.runners {
		types = append(types, t)
	}
	slices.Sort(types)
	return types
}

// lookup returns the runner of a type, or a *NotRegisteredError.
func (r *Router) lookup(componentType string) (runner.Runner, error) {
	r.mu.RLock()
	rn, ok := r.runners[componentType]
	r.mu.RUnlock()
	if !ok {
		return nil, &NotRegisteredError{Kind: "type", Name: componentType, Registered: r.Types()}
	}
	return rn, nil
}

// Run runs t through the runner registered for t.To.Type. A type with no
// runner, or a task with no To, is a runner.Permanent error. The runner's
// errors are returned as they are when they already name the component (an
// *Error, or a runner.Skip), and otherwise wrapped in an *Error.
func (r *Router) Run(ctx context.Context, t runner.Task) error {
	cv := t.To
	if cv == nil {
		return noTarget(t)
	}
	if len(cv.Phases) > 0 {
		return r.runDeclared(ctx, t) // phases.go
	}
	rn, err := r.lookup(cv.Type)
	if err != nil {
		return runner.Permanent(wrap(cv, "run", err))
	}
	if err := rn.Run(ctx, t); err != nil {
		if isSkip(err) {
			return err
		}
		return wrap(cv, "run", err)
	}
	return nil
}

// Validate reports whether r can run cv: its type is registered, and the
// registered runner, when it implements runner.Validator, accepts cv.
func (r *Router) Validate(cv *release.ComponentVersion) error {
	if cv == nil {
		return nilComponent()
	}
	if len(cv.Phases) > 0 {
		if err := r.validateDeclared(cv); err != nil {
			return wrap(cv, "validate", err)
		}
		return nil
	}
	rn, err := r.lookup(cv.Type)
	if err != nil {
		return wrap(cv, "validate", err)
	}
	if v, ok := rn.(runner.Validator); ok {
		if err := v.Validate(cv); err != nil {
			return wrap(cv, "validate", err)
		}
	}
	return nil
}

// ValidateHop implements runner.HopValidator: each registered runner that
// implements it (the Manifest runner: an object two components render) is
// asked about the hop once, however many types it is registered for, in
// the order of the types' names.
func (r *Router) ValidateHop(h *runner.HopPlan) error {
	r.mu.RLock()
	types := make([]string, 0, len(r.runners))
	for t := range r.runners {
		types = append(types, t)
	}
	r.mu.RUnlock()
	slices.Sort(types)
	var (
		errs  []error
		asked []runner.HopValidator
	)
	for _, t := range types {
		rn, _ := r.lookup(t)
		hv, ok := rn.(runner.HopValidator)
		if !ok || seen(asked, hv) {
			continue
		}
		asked = append(asked, hv)
		if err := hv.ValidateHop(h); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// seen reports whether hv is in asked; runners of a type that cannot be
// compared (== would panic) are never taken for one another.
func seen(asked []runner.HopValidator, hv runner.HopValidator) bool {
	if !reflect.TypeOf(hv).Comparable() {
		return false
	}
	for _, a := range asked {
		if reflect.TypeOf(a) == reflect.TypeOf(hv) && a == hv {
			return true
		}
	}
	return false
}

// wrap returns err when it already is an *Error, and otherwise an *Error
// naming cv.
func wrap(cv *release.ComponentVersion, op string, err error) error {
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	return &Error{Component: cv.Name, Version: cv.Version.Original(), Op: op, Err: err}
}
