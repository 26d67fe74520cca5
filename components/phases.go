package components

// The steps of an inline handler, as Task.Enter records them
// (runner.ComponentStatus.Step), in the order they run.
const (
	StepNeedsUpgrade = "needs-upgrade"
	StepPreUpgrade   = "pre-upgrade"
	StepUpgrade      = "upgrade"
	StepPostUpgrade  = "post-upgrade"
)

var inlineSteps = []string{StepNeedsUpgrade, StepPreUpgrade, StepUpgrade, StepPostUpgrade}
