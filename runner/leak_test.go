package runner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// No goroutine outlives Execute, whatever way the run ends: workers,
// backoff waits, attempt timeouts and the event dispatcher all exit.
// (TestMain also checks the whole package at the end.)
func TestNoGoroutineLeaks(t *testing.T) {
	nodes := []comp{c("a"), c("b", "a"), c("c"), c("d", "c"), c("e")}
	tests := []struct {
		name    string
		scripts map[string]runnertest.Script
		opts    []runner.Option
		node    func(comp) comp
		cancel  bool // cancel once two attempts run
		want    record.Phase
	}{
		{name: "success", want: record.Succeeded},
		{name: "failure", scripts: map[string]runnertest.Script{"a": {FailAlways: true}}, want: record.Failed},
		{name: "panic", scripts: map[string]runnertest.Script{"c": {Panic: true}}, want: record.Failed},
		{
			name:    "fail-fast cancels running",
			scripts: map[string]runnertest.Script{"a": {FailAlways: true, Delay: 5 * time.Millisecond}, "c": {Hang: true}, "e": {Hang: true}},
			opts:    []runner.Option{runner.WithFailurePolicy(runner.FailFast)},
			want:    record.Failed,
		},
		{
			name:    "caller cancel",
			scripts: map[string]runnertest.Script{"a": {Hang: true}, "c": {Hang: true}, "e": {Hang: true}},
			cancel:  true, want: record.Cancelled,
		},
		{
			name:    "timeout",
			scripts: map[string]runnertest.Script{"a": {Hang: true}, "e": {Hang: true}},
			opts:    []runner.Option{runner.WithDefaultTimeout(5 * time.Millisecond)},
			want:    record.Failed,
		},
		{
			name:    "cancel during backoff",
			scripts: map[string]runnertest.Script{"a": {FailAlways: true}, "c": {Hang: true}},
			opts:    []runner.Option{runner.WithDefaultRetries(releaseRetriesBackoff(3, time.Hour))},
			cancel:  true, want: record.Cancelled,
		},
		{
			name: "observers and checkpointer",
			opts: []runner.Option{runner.WithObserver(&recorder{}), runner.WithObserver(runner.SlogObserver(textLogger(&syncBuffer{}))),
				runner.WithCheckpointer(&snapshots{})},
			want: record.Succeeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			fake := runnertest.New()
			for n, s := range tt.scripts {
				fake.Script(n, s)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				var mu sync.Mutex
				started := 0
				fake.OnStart = func(runner.Task) {
					mu.Lock()
					defer mu.Unlock()
					if started++; started == 2 {
						// Let a failing attempt reach its backoff first.
						go func() { time.Sleep(5 * time.Millisecond); cancel() }()
					}
				}
			}
			res := wait(t, start(ctx, runner.New(fake, tt.opts...), plan1(t, nodes...), nil))
			require.NotNil(t, res.st)
			assert.Equal(t, tt.want, res.st.Phase, "Status.Phase (error %v)", res.err)
		})
	}
}
