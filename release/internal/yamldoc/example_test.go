package yamldoc_test

import (
	"fmt"
	"time"

	"github.com/hopdag/hopdag/release/internal/yamldoc"
)

// seconds is a scalar type: it decodes through encoding.TextUnmarshaler.
type seconds struct{ d time.Duration }

func (s *seconds) UnmarshalText(b []byte) error {
	d, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("example: invalid duration %q", b)
	}
	s.d = d
	return nil
}

type job struct {
	Name    string            `yaml:"name"`
	Timeout seconds           `yaml:"timeout"`
	Retries int               `yaml:"retries"`
	Env     map[string]string `yaml:"env"`
}

// Parse two documents of a file, decode each strictly into a Go value,
// and list every problem with its file, line, field path and fix.
func Example() {
	text := `name: build
timeout: 90s
retries: 2
env: {GOOS: linux}
---
name: test
timout: 10s
retries: many
env: {CGO_ENABLED: 0}
`
	var ps yamldoc.Problems
	dec := yamldoc.NewDecoder(&ps, yamldoc.Options{ErrPrefix: "example: "})
	p := yamldoc.Parser{Decode: func(doc yamldoc.Document) {
		var j job
		dec.Start(doc)
		dec.Decode(doc.Node, &j)
		fmt.Printf("line %d: %s %v %d %v\n", doc.Line, j.Name, j.Timeout.d, j.Retries, j.Env)
	}}
	p.Parse([]yamldoc.File{{Name: "jobs.yaml", Data: []byte(text)}})
	list, _ := ps.Sorted()
	for _, pr := range list {
		msg := fmt.Sprintf("%s:%d: %s: %s", pr.File, pr.Line, pr.Field, pr.Message)
		if pr.Fix != "" {
			msg += "; " + pr.Fix
		}
		fmt.Println(msg)
	}
	// Output:
	// line 1: build 1m30s 2 map[GOOS:linux]
	// line 6: test 0s 0 map[]
	// jobs.yaml:7: timout: unknown field; did you mean "timeout"?
	// jobs.yaml:8: retries: want a whole number, got "many"
	// jobs.yaml:9: env.CGO_ENABLED: want a string, got 0, a number; quote it: CGO_ENABLED: "0"
}
