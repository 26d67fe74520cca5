package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

// buildVersion is what `hopdag version` prints: the version of the module
// the binary was built from and the VCS revision, from the build
// information the go command stamps into every binary.
type buildVersion struct {
	// Version is the module version: v0.1.0 when installed with
	// go install github.com/hopdag/hopdag/cmd/hopdag@v0.1.0, "(devel)"
	// when built from a checkout.
	Version string `json:"version" yaml:"version"`
	// Revision, Time and Modified are the commit, its time and whether the
	// work tree had changes; empty when the build did not stamp them (a
	// module from a proxy, or -buildvcs=false).
	Revision string `json:"revision,omitempty" yaml:"revision,omitempty"`
	Time     string `json:"time,omitempty" yaml:"time,omitempty"`
	Modified bool   `json:"modified,omitempty" yaml:"modified,omitempty"`
	// Go is the toolchain that built the binary.
	Go string `json:"go" yaml:"go"`
}

// versionOf reads bi (nil when the binary has no build information).
func versionOf(bi *debug.BuildInfo) buildVersion {
	v := buildVersion{Version: "(devel)"}
	if bi == nil {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	v.Go = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// text is the one-line form: "hopdag VERSION", the revision when known
// (", modified" when the tree had changes), and the Go version.
func (v buildVersion) text() string {
	s := "hopdag " + v.Version
	if v.Revision != "" {
		s += " (revision " + v.Revision
		if v.Time != "" {
			s += ", " + v.Time
		}
		if v.Modified {
			s += ", modified"
		}
		s += ")"
	}
	if v.Go != "" {
		s += " " + v.Go
	}
	return s
}

// version prints the binary's version (hopdag version, hopdag --version).
func (c *cli) version(context.Context) int {
	if len(c.pos) > 0 {
		return c.usageError(fmt.Sprintf("version takes no arguments, got %q", c.pos[0]))
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	v := versionOf(bi)
	if code := c.outputIn("text", "json", "yaml"); code != exitOK {
		return code
	}
	if *c.output == "text" {
		fmt.Fprintln(c.stdout, v.text())
		return exitOK
	}
	if err := c.print(kindVersion, v); err != nil {
		return c.fail1(err)
	}
	return exitOK
}
