// Package simulate runs a plan with simulated runners, for the demo and for
// `hopdag run --simulate`: inline handlers, manifest applies, exec commands
// and Helm releases take the component's expectedDuration scaled down by a
// speed factor, manifests are really rendered and recorded
// (components.Recorder), commands and charts are neither rendered nor run,
// hop checks pass, chosen components (of any type) fail on purpose to show
// skips and resume, and every component can roll back.
//
// It is exported because two modules share it: the demo
// (examples/cluster-upgrade, in the core module) and the hopdag command
// (module github.com/hopdag/hopdag/cmd/hopdag), and a module may not import
// another module's internal packages. Use it to try a catalog's plans
// without touching a system; Run is the entry point.
package simulate
