package report_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/report"
)

func status() *record.Status {
	t0 := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	return &record.Status{Phase: record.Failed, Code: record.CodeComponentFailed, From: "v1", To: "v2", Runs: 1,
		Progress: record.Progress{Done: 2, Total: 4},
		Hops: []record.HopStatus{{From: "v1", To: "v2", Phase: record.Failed, Components: []record.ComponentStatus{
			{Name: "a", ToVersion: "1.1", Phase: record.Failed, Attempts: 2, Code: record.CodeComponentFailed,
				StartedAt: t0.Add(2 * time.Second), Duration: release.D(1500 * time.Millisecond), Error: "boom\nsecond line"},
			{Name: "b", FromVersion: "1.0", ToVersion: "1.1", Phase: record.Succeeded, Attempts: 1,
				StartedAt: t0, Duration: release.D(2 * time.Second)},
			{Name: "c", ToVersion: "1.1", Phase: record.Skipped, Code: record.CodeDependencyFailed, Reason: "dependency a failed"},
			{Name: "d", ToVersion: "1.1", Phase: record.Succeeded, Attempts: 1, StartedAt: t0.Add(time.Second), Duration: release.D(time.Second)},
		}}},
		LastFailure: &record.Failure{Hop: 0, Component: "a", Version: "1.1", Code: record.CodeComponentFailed, Error: "boom"},
	}
}

func TestTable(t *testing.T) {
	tests := []struct {
		name  string
		order [][]string
		want  string
	}{
		{"plan order", [][]string{{"b", "d", "a", "c"}}, `status v1 -> v2: Failed (COMPONENT_FAILED), 2/4 components done, run 1
HOP         COMPONENT  FROM  TO   PHASE      ATTEMPTS  DURATION  CODE               ERROR
1 v1 -> v2  b          1.0   1.1  Succeeded  1         2s        -
1 v1 -> v2  d          -     1.1  Succeeded  1         1s        -
1 v1 -> v2  a          -     1.1  Failed     2         1.5s      COMPONENT_FAILED   boom … second line
1 v1 -> v2  c          -     1.1  Skipped    0         -         DEPENDENCY_FAILED  dependency a failed
last failure: hop 1 a 1.1: COMPONENT_FAILED: boom
`},
		{"start order without a plan", nil, `status v1 -> v2: Failed (COMPONENT_FAILED), 2/4 components done, run 1
HOP         COMPONENT  FROM  TO   PHASE      ATTEMPTS  DURATION  CODE               ERROR
1 v1 -> v2  b          1.0   1.1  Succeeded  1         2s        -
1 v1 -> v2  d          -     1.1  Succeeded  1         1s        -
1 v1 -> v2  a          -     1.1  Failed     2         1.5s      COMPONENT_FAILED   boom … second line
1 v1 -> v2  c          -     1.1  Skipped    0         -         DEPENDENCY_FAILED  dependency a failed
last failure: hop 1 a 1.1: COMPONENT_FAILED: boom
`},
		{"names missing from the order come last", [][]string{{"c", "a"}}, `status v1 -> v2: Failed (COMPONENT_FAILED), 2/4 components done, run 1
HOP         COMPONENT  FROM  TO   PHASE      ATTEMPTS  DURATION  CODE               ERROR
1 v1 -> v2  c          -     1.1  Skipped    0         -         DEPENDENCY_FAILED  dependency a failed
1 v1 -> v2  a          -     1.1  Failed     2         1.5s      COMPONENT_FAILED   boom … second line
1 v1 -> v2  b          1.0   1.1  Succeeded  1         2s        -
1 v1 -> v2  d          -     1.1  Succeeded  1         1s        -
last failure: hop 1 a 1.1: COMPONENT_FAILED: boom
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			report.Table(&b, status(), tt.order)
			assert.Equal(t, tt.want, b.String(), "Table (-want +got)")
		})
	}
}

// Without the plan, a status that records the plan's order
// (ComponentStatus.Order, written by runner.NewStatus) lists the rows in
// it, as hopdag run does; an error of several lines (an exec failure's
// "last lines of stderr:") shows its first and last lines.
func TestTableStoredOrder(t *testing.T) {
	s := status()
	for i, name := range []string{"c", "a", "d", "b"} {
		c, _ := s.Component(0, name)
		c.Order = i + 1
	}
	c, _ := s.Component(0, "a")
	c.Error = "components: a 1.1: exit status 1; last lines of stderr:\nstarting\nerror: disk full\n"
	var b bytes.Buffer
	report.Table(&b, s, nil)
	assert.Equal(t, `status v1 -> v2: Failed (COMPONENT_FAILED), 2/4 components done, run 1
HOP         COMPONENT  FROM  TO   PHASE      ATTEMPTS  DURATION  CODE               ERROR
1 v1 -> v2  c          -     1.1  Skipped    0         -         DEPENDENCY_FAILED  dependency a failed
1 v1 -> v2  a          -     1.1  Failed     2         1.5s      COMPONENT_FAILED   components: a 1.1: exit status 1; last lines of stderr: … error: disk full
1 v1 -> v2  d          -     1.1  Succeeded  1         1s        -
1 v1 -> v2  b          1.0   1.1  Succeeded  1         2s        -
last failure: hop 1 a 1.1: COMPONENT_FAILED: boom
`, b.String())
}

func ExampleTable() {
	s := &record.Status{Phase: record.Succeeded, From: "v1", To: "v2", Runs: 1, Progress: record.Progress{Done: 2, Total: 2},
		Hops: []record.HopStatus{{From: "v1", To: "v2", Phase: record.Succeeded, Components: []record.ComponentStatus{
			{Name: "app", FromVersion: "1.0", ToVersion: "1.1", Phase: record.Succeeded, Attempts: 1, Duration: release.D(3 * time.Second)},
			{Name: "db", FromVersion: "5.0", ToVersion: "5.1", Phase: record.Succeeded, Attempts: 1, Duration: release.D(time.Second)},
		}}}}
	report.Table(os.Stdout, s, [][]string{{"db", "app"}}) // db's batch runs first
	// Output:
	// status v1 -> v2: Succeeded, 2/2 components done, run 1
	// HOP         COMPONENT  FROM  TO   PHASE      ATTEMPTS  DURATION  CODE  ERROR
	// 1 v1 -> v2  db         5.0   5.1  Succeeded  1         1s        -
	// 1 v1 -> v2  app        1.0   1.1  Succeeded  1         3s        -
}

// On a route across tracks each hop says which track moves.
func TestTableTrack(t *testing.T) {
	s := &record.Status{Phase: record.Succeeded, From: "platform=13.01.0,kubernetes=v1.32.0", To: "platform=13.01.2", Runs: 1, Progress: record.Progress{Done: 1, Total: 1},
		Hops: []record.HopStatus{{Track: "platform", From: "13.01.0", To: "13.01.2", Phase: record.Succeeded, Components: []record.ComponentStatus{
			{Name: "sysinv", FromVersion: "13.01.0", ToVersion: "13.01.2", Phase: record.Succeeded, Attempts: 1, Duration: release.D(time.Second)},
		}}}}
	var b bytes.Buffer
	report.Table(&b, s, nil)
	assert.Contains(t, b.String(), "\n1 platform 13.01.0 -> 13.01.2  sysinv")
}

// The message and the last failure print every line of a failure of
// several lines (an exec failure's stderr), indented under it, at most
// ten; a message that says what the last failure says prints its first
// line only.
func TestTableFailureLines(t *testing.T) {
	stderr := "components: a 1.1: exec: sh: exit code 3; last lines of stderr:\n\tstarting\n\n\tE: disk full on /var\nno tab\n\t\tnested"
	var many strings.Builder
	many.WriteString("two problems:")
	for i := range 12 {
		fmt.Fprintf(&many, "\n\tline %d", i+1)
	}
	tests := []struct {
		name, message, failure, want string
	}{
		{"message is the failure", stderr, stderr, `message: components: a 1.1: exec: sh: exit code 3; last lines of stderr:
last failure: hop 1 a 1.1: COMPONENT_FAILED: components: a 1.1: exec: sh: exit code 3; last lines of stderr:
    starting
    E: disk full on /var
    no tab
      nested
`},
		{"message ends with the failure", "rolled back after: " + stderr, stderr, `message: rolled back after: components: a 1.1: exec: sh: exit code 3; last lines of stderr:
last failure: hop 1 a 1.1: COMPONENT_FAILED: components: a 1.1: exec: sh: exit code 3; last lines of stderr:
    starting
    E: disk full on /var
    no tab
      nested
`},
		{"message of its own", many.String(), "boom", `message: two problems:
    line 1
    line 2
    line 3
    line 4
    line 5
    line 6
    line 7
    line 8
    line 9
    line 10
    … 2 more lines
last failure: hop 1 a 1.1: COMPONENT_FAILED: boom
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := status()
			s.Message, s.LastFailure.Error = tt.message, tt.failure
			var b bytes.Buffer
			report.Table(&b, s, nil)
			var got []string
			for line := range strings.Lines(b.String()) {
				if !strings.HasPrefix(line, "status ") && !strings.HasPrefix(line, "HOP") && !strings.HasPrefix(line, "1 v1") {
					got = append(got, line)
				}
			}
			assert.Equal(t, tt.want, strings.Join(got, ""), "Table's message and last failure (-want +got)")
		})
	}
}

// What the JSON status holds shows in the table too: a hop's warnings
// (failed checks that were not required), one line per hop that has
// them, and the catalog bundle the run came from (its digest, and whether
// it came from the cache).
func TestTableWarningsAndCatalog(t *testing.T) {
	tests := []struct {
		name    string
		catalog record.CatalogSource
		want    []string
	}{
		{"a directory", record.CatalogSource{}, nil},
		{"a bundle", record.CatalogSource{Ref: "oci://r.example/demo:v2", Digest: "sha256:abc"},
			[]string{"catalog: oci://r.example/demo:v2 (sha256:abc)\n"}},
		{"from the cache", record.CatalogSource{Ref: "oci://r.example/demo:v2", Digest: "sha256:abc", Cached: true, Note: "registry unreachable"},
			[]string{"catalog: oci://r.example/demo:v2 (sha256:abc), from the local cache: registry unreachable\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := status()
			s.Catalog = tt.catalog
			s.Hops = append(s.Hops, record.HopStatus{From: "v2", To: "v3", Phase: record.Pending})
			s.Hops[0].Warnings = []string{"pre-check disk failed: 91% used", "post-check smoke failed: exit 1\nlast lines of stderr:\n\tno answer"}
			var b bytes.Buffer
			report.Table(&b, s, nil)
			var got []string
			for line := range strings.Lines(b.String()) {
				if strings.HasPrefix(line, "catalog: ") || strings.HasPrefix(line, "warnings: ") {
					got = append(got, line)
				}
			}
			want := append(tt.want, "warnings: hop 1 v1 -> v2: pre-check disk failed: 91% used; post-check smoke failed: exit 1 … no answer\n")
			assert.Equal(t, want, got, "Table's catalog and warnings lines (-want +got):\n%s", b.String())
		})
	}
}

// A failure that names no component (a rollback requested of the run)
// reads "hop N: CODE: ...", without the blanks of a missing name.
func TestTableRequestedRollback(t *testing.T) {
	s := status()
	s.LastFailure = &record.Failure{Hop: 1, Code: record.CodeRollbackRequested, Error: "rollback requested: v1.1 breaks billing"}
	var b bytes.Buffer
	report.Table(&b, s, nil)
	assert.Contains(t, b.String(), "\nlast failure: hop 2: ROLLBACK_REQUESTED: rollback requested: v1.1 breaks billing\n")
}
