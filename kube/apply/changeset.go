package apply

import (
	"strings"

	"github.com/hopdag/hopdag/components"
)

// Action is what an Apply or a Delete did to one object.
type Action string

// The actions of a ChangeSet.
const (
	// Created: the object did not exist and was created.
	Created Action = "created"
	// Configured: the object existed and the apply changed it.
	Configured Action = "configured"
	// Unchanged: the object existed and the apply changed nothing (its
	// resourceVersion is the same).
	Unchanged Action = "unchanged"
	// Pruned: the object was deleted (foreground propagation).
	Pruned Action = "pruned"
	// Skipped: a prune left the object in place, because its ownership
	// labels name another component or instance.
	Skipped Action = "skipped"
	// Gone: a prune found the object, or its kind, already gone.
	Gone Action = "gone"
)

// Change is one object's Action. Reason says why an object was skipped.
type Change struct {
	Object components.Ref
	Action Action
	Reason string
	// DryRun is true when nothing was changed (WithDryRun).
	DryRun bool
}

// String is "Kind.group namespace/name created", with " (dry run)" and
// the reason when there are.
func (c Change) String() string {
	s := c.Object.String() + " " + string(c.Action)
	if c.Reason != "" {
		s += " (" + c.Reason + ")"
	}
	if c.DryRun {
		s += " (dry run)"
	}
	return s
}

// ChangeSet is what one Apply or Delete did, one Change per object in the
// order the objects were given (Apply: Namespaces and CRDs first).
type ChangeSet []Change

// String is one Change a line.
func (cs ChangeSet) String() string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Count returns how many changes have the action.
func (cs ChangeSet) Count(a Action) int {
	n := 0
	for _, c := range cs {
		if c.Action == a {
			n++
		}
	}
	return n
}
