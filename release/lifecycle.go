package release

import (
	"fmt"
	"slices"
)

// Lifecycle is what a ComponentVersion declares about how it is stepped
// through and undone: its lifecycle phases, its gate, its rollback. It is
// embedded in ComponentVersion, so its fields are written at the
// ComponentVersion's level in YAML (spec.phases, spec.gate, ...).
type Lifecycle struct {
	// Phases, when set, are the component's lifecycle phases, run in
	// order in place of its type's single step (the OpenStack LCM
	// operator's drain, upgrade, test, rollout). A retry or resumed run
	// continues at the phase that failed or was interrupted.
	Phases []LifecyclePhase `json:"phases,omitempty" yaml:"phases,omitempty"`
	// Gate, when set, holds the component before it starts until an
	// operator approves it.
	Gate *Gate `json:"gate,omitempty" yaml:"gate,omitempty"`
	// Rollback is the command that undoes an exec component's upgrade
	// (back to its from-version), run by the Rollback failure policy.
	Rollback *Command `json:"rollback,omitempty" yaml:"rollback,omitempty"`
	// Irreversible, when set, says why the component cannot be rolled
	// back (an etcd data migration): a rollback stops at it.
	Irreversible string `json:"irreversible,omitempty" yaml:"irreversible,omitempty"`
}

// LifecyclePhase is one declared phase of a component: an inline
// handler's step (Handler), a command (Command) or manifests (Manifests),
// exactly one of them.
type LifecyclePhase struct {
	// Name names the phase in the status and in steps ("drain").
	Name string `json:"name" yaml:"name"`
	// Handler names a step of the component's inline handler.
	Handler string `json:"handler,omitempty" yaml:"handler,omitempty"`
	// Command is run as an exec component's command is.
	Command *Command `json:"command,omitempty" yaml:"command,omitempty"`
	// Manifests are rendered and applied as a manifest component's are.
	Manifests []Manifest `json:"manifests,omitempty" yaml:"manifests,omitempty"`
	// Gate, when set, holds the phase until an operator approves it.
	Gate *Gate `json:"gate,omitempty" yaml:"gate,omitempty"`
}

// Gate holds a step (a hop, a component, a phase) until an operator
// approves it. An empty Gate (`gate: {}`) is a gate.
type Gate struct {
	// Reason says what the operator should look at before approving.
	Reason string `json:"reason,omitempty" yaml:"reason,omitempty"`
}

// Phase returns the declared phase of that name.
func (l *Lifecycle) Phase(name string) (*LifecyclePhase, bool) {
	for i := range l.Phases {
		if l.Phases[i].Name == name {
			return &l.Phases[i], true
		}
	}
	return nil, false
}

// RuleControl is what an UpgradePath rule declares about running its
// edge: a gate before the hop and the failure policy. It is embedded in
// Rule.
type RuleControl struct {
	// Gate, when set, holds the hop before it starts until an operator
	// approves it.
	Gate *Gate `json:"gate,omitempty" yaml:"gate,omitempty"`
	// OnFailure is the hop's failure policy: "" (the executor's) or
	// OnFailureRollback.
	OnFailure string `json:"onFailure,omitempty" yaml:"onFailure,omitempty"`
}

// OnFailureRollback is the RuleControl.OnFailure that rolls a failed hop
// back.
const OnFailureRollback = "rollback"

func (l *Lifecycle) deepCopyInto(out *Lifecycle) {
	if l.Phases != nil {
		out.Phases = make([]LifecyclePhase, len(l.Phases))
		for i, p := range l.Phases {
			p.Command = p.Command.DeepCopy()
			p.Manifests = slices.Clone(p.Manifests)
			if p.Gate != nil {
				g := *p.Gate
				p.Gate = &g
			}
			out.Phases[i] = p
		}
	}
	if l.Gate != nil {
		g := *l.Gate
		out.Gate = &g
	}
	out.Rollback = l.Rollback.DeepCopy()
}

func (rc *RuleControl) deepCopyInto(out *RuleControl) {
	if rc.Gate != nil {
		g := *rc.Gate
		out.Gate = &g
	}
}

// hasManifestPhase reports whether a phase of l has manifests.
func (l *Lifecycle) hasManifestPhase() bool {
	return slices.ContainsFunc(l.Phases, func(p LifecyclePhase) bool { return len(p.Manifests) > 0 })
}

// onlyManifestPhases reports whether l has phases and each has manifests.
func (l *Lifecycle) onlyManifestPhases() bool {
	return len(l.Phases) > 0 && !slices.ContainsFunc(l.Phases, func(p LifecyclePhase) bool { return len(p.Manifests) == 0 })
}

// hasCommandPhase reports whether a phase of l has a command.
func (l *Lifecycle) hasCommandPhase() bool {
	return slices.ContainsFunc(l.Phases, func(p LifecyclePhase) bool { return p.Command != nil })
}

// onlyCommandPhases reports whether l has phases and each has a command.
func (l *Lifecycle) onlyCommandPhases() bool {
	return len(l.Phases) > 0 && !slices.ContainsFunc(l.Phases, func(p LifecyclePhase) bool { return p.Command == nil })
}

// validateLifecycle checks cv's phases and rollback; bad reports the
// fields left zero because they were unusable (reported already).
func validateLifecycle(cv *ComponentVersion, at func(path ...any) Problem, bad func(path ...any) bool, ps *problems) {
	if len(cv.Phases) > 0 {
		const msg = "a component with lifecycle phases runs them in place of its type's step: spec.%s %s never %s"
		if len(cv.Manifests) > 0 {
			ps.add(at("manifests").with(fmt.Sprintf(msg, "manifests", "are", "applied"), "move them into a phase's manifests"))
		}
		if cv.Command != nil {
			ps.add(at("command").with(fmt.Sprintf(msg, "command", "is", "run"), "move it into a phase's command"))
		}
		if cv.Helm != nil {
			ps.add(at("helm").with(fmt.Sprintf(msg, "helm", "is", "installed"), "remove phases, or spec.helm"))
		}
	}
	seen := map[string]int{}
	for i, p := range cv.Phases {
		if p.Name == "" {
			if !bad("phases", i, "name") {
				ps.add(at("phases", i).with("lifecycle phase has no name", "set name, e.g. drain"))
			}
		} else if j, dup := seen[p.Name]; dup {
			ps.add(at("phases", i, "name").with(fmt.Sprintf("lifecycle phase %s is declared twice (also at phases[%d])", p.Name, j), "give each phase its own name"))
		}
		seen[p.Name] = i
		n := 0
		if p.Handler != "" {
			n++
		}
		if p.Command != nil {
			n++
			if (len(p.Command.Args) == 0 || p.Command.Args[0] == "") && !bad("phases", i, "command") {
				ps.add(at("phases", i, "command").with("a phase's command needs args", "set args to an argv list"))
			}
		}
		if len(p.Manifests) > 0 {
			n++
		}
		if n != 1 && !bad("phases", i, "handler") && !bad("phases", i, "command") && !bad("phases", i, "manifests") {
			ps.add(at("phases", i).with(fmt.Sprintf("lifecycle phase %s needs exactly one of handler, command and manifests, has %d", quote(p.Name), n), "keep one of them"))
		}
	}
	if cv.Rollback != nil && (len(cv.Rollback.Args) == 0 || cv.Rollback.Args[0] == "") && !bad("rollback") {
		ps.add(at("rollback").with("a rollback command needs args", "set rollback.args to an argv list, e.g. [/usr/bin/downgrade, --to, \"{{.From.Version}}\"]"))
	}
}
