package runner_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// journal records the order in which checks and components ran.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, s)
}

func (j *journal) all() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.lines...)
}

func TestHopChecks(t *testing.T) {
	errCheck := errors.New("not healthy")
	tests := []struct {
		name         string
		pre, post    []release.Check
		fail         string // the check that fails
		panics       bool
		wantErr      bool
		wantHop      record.Phase
		wantJournal  []string
		wantWarnings []string
		wantChecks   []record.CheckStatus
	}{
		{
			name: "all pass", pre: []release.Check{{Name: "healthy", Required: true}, {Name: "mirror"}}, post: []release.Check{{Name: "ready", Required: true}},
			wantHop:     record.Succeeded,
			wantJournal: []string{"pre healthy", "pre mirror", "run a", "run b", "post ready", "run later"},
			wantChecks: []record.CheckStatus{
				{Name: "healthy", Stage: "pre", Required: true, Phase: record.Succeeded},
				{Name: "mirror", Stage: "pre", Phase: record.Succeeded},
				{Name: "ready", Stage: "post", Required: true, Phase: record.Succeeded},
			},
		},
		{
			name: "required pre-check fails", pre: []release.Check{{Name: "healthy", Required: true}, {Name: "mirror"}}, fail: "healthy",
			wantErr: true, wantHop: record.Failed,
			wantJournal: []string{"pre healthy"},
			wantChecks:  []record.CheckStatus{{Name: "healthy", Stage: "pre", Required: true, Phase: record.Failed, Error: "not healthy"}},
		},
		{
			name: "optional pre-check fails", pre: []release.Check{{Name: "mirror"}, {Name: "healthy", Required: true}}, fail: "mirror",
			wantHop:      record.Succeeded,
			wantJournal:  []string{"pre mirror", "pre healthy", "run a", "run b", "run later"},
			wantWarnings: []string{"pre-check mirror failed: not healthy"},
			wantChecks: []record.CheckStatus{
				{Name: "mirror", Stage: "pre", Phase: record.Failed, Error: "not healthy"},
				{Name: "healthy", Stage: "pre", Required: true, Phase: record.Succeeded},
			},
		},
		{
			name: "required post-check fails", post: []release.Check{{Name: "ready", Required: true}}, fail: "ready",
			wantErr: true, wantHop: record.Failed,
			wantJournal: []string{"run a", "run b", "post ready"},
			wantChecks:  []record.CheckStatus{{Name: "ready", Stage: "post", Required: true, Phase: record.Failed, Error: "not healthy"}},
		},
		{
			name: "optional post-check fails", post: []release.Check{{Name: "smoke"}}, fail: "smoke",
			wantHop:      record.Succeeded,
			wantJournal:  []string{"run a", "run b", "post smoke", "run later"},
			wantWarnings: []string{"post-check smoke failed: not healthy"},
			wantChecks:   []record.CheckStatus{{Name: "smoke", Stage: "post", Phase: record.Failed, Error: "not healthy"}},
		},
		{
			name: "required check panics", pre: []release.Check{{Name: "healthy", Required: true}}, fail: "healthy", panics: true,
			wantErr: true, wantHop: record.Failed,
			wantJournal: []string{"pre healthy"},
			wantChecks:  []record.CheckStatus{{Name: "healthy", Stage: "pre", Required: true, Phase: record.Failed, Error: "runner: panic: check exploded"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &journal{}
			var tasks []runner.CheckTask
			check := func(_ context.Context, ct runner.CheckTask) error {
				j.add(ct.Stage + " " + ct.Name)
				tasks = append(tasks, ct) // checks run one at a time
				if ct.Name != tt.fail {
					return nil
				}
				if tt.panics {
					panic("check exploded")
				}
				return errCheck
			}
			fake := runnertest.New()
			fake.OnStart = func(task runner.Task) { j.add("run " + task.Component) }
			opts := []runner.Option{runner.WithMaxParallel(1)}
			for _, n := range []string{"healthy", "mirror", "ready", "smoke"} {
				opts = append(opts, runner.WithCheck(n, check))
			}
			p := planOf(hop{g: graphOf(t, c("a"), c("b", "a")), pre: tt.pre, post: tt.post}, hop{g: graphOf(t, c("later"))})
			st, err := runner.New(fake, opts...).Execute(context.Background(), p, nil)

			assert.Equal(t, tt.wantJournal, j.all(), "what ran, in order")
			assert.Equal(t, tt.wantHop, st.Hops[0].Phase, "hop 1 phase")
			assert.Equal(t, tt.wantChecks, st.Hops[0].Checks, "hop 1 checks")
			assert.Equal(t, tt.wantWarnings, st.Hops[0].Warnings, "hop 1 warnings")
			for _, ct := range tasks {
				assert.Equal(t, 0, ct.HopIndex, "CheckTask.HopIndex")
				assert.Same(t, p.Hops[0], ct.Hop, "CheckTask.Hop")
				assert.NotNil(t, ct.Logger, "CheckTask.Logger")
			}
			if !tt.wantErr {
				require.NoError(t, err)
				assert.Equal(t, record.Succeeded, st.Phase)
				return
			}
			require.ErrorIs(t, err, runner.ErrRunFailed)
			var ce *runner.CheckError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.fail, ce.Check, "CheckError.Check")
			assert.Equal(t, 0, ce.Hop, "CheckError.Hop")
			if !tt.panics {
				assert.ErrorIs(t, err, errCheck)
			}
			assert.Equal(t, record.CodeCheckFailed, st.Hops[0].Code, "hop 1 code")
			assert.Contains(t, st.Hops[0].Message, fmt.Sprintf("required %s-check %s failed", ce.Stage, tt.fail), "hop 1 message")
			assert.Equal(t, record.Failed, st.Phase, "Status.Phase")
			assert.Equal(t, record.CodeCheckFailed, st.Code, "Status.Code")
			require.NotNil(t, st.LastFailure)
			assert.Equal(t, tt.fail, st.LastFailure.Check, "LastFailure.Check")
			assert.Equal(t, record.Pending, st.Hops[1].Phase, "hop 2 does not start")
		})
	}
}

// A check that returns nil while the caller cancels has passed: the status
// says what ran. After the last post-check of a hop, every stage of the
// hop ran to its end and the hop Succeeded; the run stops before the next
// hop (Cancelled), or Succeeded if there is none; so too after the last
// component of a hop without post-checks. After a pre-check, the
// components did not run: the hop is Cancelled.
func TestCheckPassesWhileCancelled(t *testing.T) {
	tests := []struct {
		name      string
		stage     string // where the cancelling check runs
		hops      int
		wantHop   record.Phase
		wantRun   record.Phase
		wantErr   error
		wantA     record.Phase
		wantHop2  record.Phase
		wantCheck record.Phase
	}{
		{"last post-check, last hop", "post", 1, record.Succeeded, record.Succeeded, nil, record.Succeeded, "", record.Succeeded},
		{"last post-check, a hop follows", "post", 2, record.Succeeded, record.Cancelled, context.Canceled, record.Succeeded, record.Cancelled, record.Succeeded},
		{"pre-check", "pre", 1, record.Cancelled, record.Cancelled, context.Canceled, record.Cancelled, "", record.Succeeded},
		{"last component, no checks", "", 1, record.Succeeded, record.Succeeded, nil, record.Succeeded, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			check := func(context.Context, runner.CheckTask) error { cancel(); return nil }
			rn := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
			h1 := hop{g: graphOf(t, c("a"))}
			var wantChecks []record.CheckStatus
			switch tt.stage {
			case "pre":
				h1.pre = []release.Check{{Name: "ready", Required: true}}
			case "post":
				h1.post = []release.Check{{Name: "ready", Required: true}}
			default: // the component cancels, and succeeds
				rn = func(context.Context, runner.Task) error { cancel(); return nil }
			}
			if tt.stage != "" {
				wantChecks = []record.CheckStatus{{Name: "ready", Stage: tt.stage, Required: true, Phase: tt.wantCheck}}
			}
			hops := []hop{h1}
			if tt.hops == 2 {
				hops = append(hops, hop{g: graphOf(t, c("later"))})
			}
			st, err := runner.New(rn, runner.WithCheck("ready", check)).Execute(ctx, planOf(hops...), nil)
			if tt.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tt.wantErr)
				assert.NotErrorIs(t, err, runner.ErrRunFailed, "nothing failed")
			}
			assert.Equal(t, tt.wantRun, st.Phase, "Status.Phase")
			assert.Equal(t, tt.wantHop, st.Hops[0].Phase, "hop 1 phase (message %q)", st.Hops[0].Message)
			assert.Equal(t, wantChecks, st.Hops[0].Checks, "hop 1 checks")
			assert.Equal(t, tt.wantA, compStatus(t, st, 0, "a").Phase, "a phase")
			if tt.hops == 2 {
				assert.Equal(t, tt.wantHop2, st.Hops[1].Phase, "hop 2 phase")
			}
			if tt.wantHop == record.Succeeded {
				assert.Empty(t, st.Hops[0].Code, "hop 1 code")
				assert.Empty(t, st.Hops[0].Message, "hop 1 message")
			}
		})
	}
}
