package record

// Ref names one component record of a Status: Status.Hops[Hop].Components[Component].
// A store that records only what changed (runner.ChangeCheckpointer) is
// told the Refs of the records that changed.
type Ref struct {
	Hop       int
	Component int
}
