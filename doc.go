// Package hopdag is a library for declarative, multi-hop, DAG-driven
// component upgrades. Declare "go to v26.09": package path finds the chain
// of hops the UpgradePath rules allow, package dag builds for each hop the
// graph of the components that change, and package runner runs them in
// parallel through pluggable runners (package components), with timeouts,
// retries, failure policies, a durable status that resumes after a crash,
// events, and a plan that can be shown before anything runs.
//
// Package release holds the data model and the strict YAML loader. This
// root package only carries the sample catalog the demo and the CLI run on.
package hopdag

import (
	"embed"
	"io/fs"
)

//go:embed testdata/catalog
var sample embed.FS

// SampleCatalog is the openFuyao-like sample catalog of testdata/catalog:
// releases v26.03 to v26.09 of eleven components and their upgrade paths.
// Load it with release.Load(hopdag.SampleCatalog()).
func SampleCatalog() fs.FS {
	sub, err := fs.Sub(sample, "testdata/catalog")
	if err != nil {
		panic(err) // the embed pattern above guarantees the directory
	}
	return sub
}
