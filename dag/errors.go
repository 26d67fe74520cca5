package dag

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors matched with errors.Is by what New and Build return.
var (
	// ErrCycle is matched by a *CycleError.
	ErrCycle = errors.New("dag: dependency cycle")
	// ErrMissingDependency is matched by a *DependencyError for a dependency
	// on a component the release (or the node list) does not have.
	ErrMissingDependency = errors.New("dag: missing dependency")
	// ErrSelfDependency is matched by a *DependencyError for a component
	// that depends on itself.
	ErrSelfDependency = errors.New("dag: self-dependency")
	// ErrDuplicateNode is returned for two nodes (or two components of a
	// release) with the same name, and for a node without a name.
	ErrDuplicateNode = errors.New("dag: duplicate node")
	// ErrUnknownComponent is returned by Build when a release ships a
	// component version the catalog does not have.
	ErrUnknownComponent = errors.New("dag: unknown component version")
)

// DependencyError is one bad dependency: on a component that is missing
// (Err is ErrMissingDependency) or on the component itself (Err is
// ErrSelfDependency).
type DependencyError struct {
	// Component declares the dependency.
	Component string
	// Dependency is the name it depends on.
	Dependency string
	// Release is the version of the to-release (Build), or "" (New).
	Release string
	// Err is ErrMissingDependency or ErrSelfDependency.
	Err error
}

// Error names both components, e.g. "dag: kubernetes-master depends on
// etcd, which release v26.06 does not ship".
func (e *DependencyError) Error() string {
	if e.Err == ErrSelfDependency {
		return "dag: " + e.Component + " depends on itself"
	}
	if e.Release != "" {
		return "dag: " + e.Component + " depends on " + e.Dependency + ", which release " + e.Release + " does not ship"
	}
	return "dag: " + e.Component + " depends on " + e.Dependency + ", which is not in the graph"
}

// Unwrap returns Err.
func (e *DependencyError) Unwrap() error { return e.Err }

// joinErrors returns nil, the only error, or errors.Join of all of them.
func joinErrors(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// sortDependencyErrors orders by component then dependency.
func sortDependencyErrors(errs []*DependencyError) {
	slices.SortFunc(errs, func(a, b *DependencyError) int {
		if c := strings.Compare(a.Component, b.Component); c != 0 {
			return c
		}
		return strings.Compare(a.Dependency, b.Dependency)
	})
}

// wrapped is an error with its own message that matches a sentinel.
type wrapped struct {
	msg      string
	sentinel error
}

func (e *wrapped) Error() string { return e.msg }

func (e *wrapped) Unwrap() error { return e.sentinel }

func errorf(sentinel error, format string, args ...any) error {
	return &wrapped{msg: fmt.Sprintf(format, args...), sentinel: sentinel}
}
