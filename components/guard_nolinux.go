//go:build unix && !linux

package components

// replaceParentDeathSignal does nothing: there is no parent-death signal
// here; the guard polls its parent (guard_unix.go).
func replaceParentDeathSignal() error { return nil }
