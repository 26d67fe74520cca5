package main

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
)

// promptWatch is abandon's stderr: asked is closed once the [y/N]
// question is written.
type promptWatch struct {
	mu    sync.Mutex
	buf   strings.Builder
	asked chan struct{}
	once  sync.Once
}

func (w *promptWatch) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if strings.Contains(w.buf.String(), "[y/N]") {
		w.once.Do(func() { close(w.asked) })
	}
	return len(b), nil
}

func (w *promptWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// hopdag abandon asks before it takes the lock, however long the answer
// takes: while the question waits, the lock is free (a run started
// elsewhere takes it, as after 15 s it took the lock abandon held and let
// expire). After the answer it takes the lock and abandons only the
// record the user confirmed: a lock taken meanwhile, or a status that
// changed meanwhile, is refused, saying what to run, and nothing is
// abandoned.
func TestAbandonAsksBeforeLocking(t *testing.T) {
	for _, tc := range []struct {
		name string
		// meanwhile is what another hopdag does while the question
		// waits, with the store of the same directory.
		meanwhile func(t *testing.T, f *state.File)
		code      int
		// says is on stdout (success) or stderr (refusal).
		says  string
		phase record.Phase // what the store holds at the end
	}{
		{
			name: "a run takes the lock and releases it",
			meanwhile: func(t *testing.T, f *state.File) {
				l, err := f.Acquire(context.Background(), "node-b/7 (run)", time.Minute)
				require.NoError(t, err, "the lock is free while abandon asks")
				require.NoError(t, f.Release(context.Background(), l))
			},
			code: exitOK, says: "abandoned v1.0 -> v2.0 (was Failed)", phase: record.Abandoned,
		},
		{
			name: "a run holds the lock",
			meanwhile: func(t *testing.T, f *state.File) {
				_, err := f.Acquire(context.Background(), "node-b/7 (run)", time.Minute)
				require.NoError(t, err, "the lock is free while abandon asks")
			},
			code: exitInvalid, says: "a process holds the lock: node-b/7 (run)", phase: record.Failed,
		},
		{
			name: "a run changes the status",
			meanwhile: func(t *testing.T, f *state.File) {
				ctx := context.Background()
				l, err := f.Acquire(ctx, "node-b/7 (run)", time.Minute)
				require.NoError(t, err, "the lock is free while abandon asks")
				st := fixture(record.Failed)
				st.Runs = 2
				require.NoError(t, f.Save(ctx, l.Token, st))
				require.NoError(t, f.Release(ctx, l))
			},
			code: exitInvalid, says: "changed since you confirmed", phase: record.Failed,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := savedWith(t, fixture(record.Failed), leaseReleased)
			other, err := state.OpenFile(dir)
			require.NoError(t, err)
			defer other.Close()

			answer, answerW := io.Pipe()
			t.Cleanup(func() { answerW.Close() }) // a test that failed early ends abandon too
			stderr := &promptWatch{asked: make(chan struct{})}
			var stdout lockedWriter
			stdout.w = &strings.Builder{}
			done := make(chan int, 1)
			go func() {
				done <- runWith(context.Background(), env{stdin: answer, stdout: &stdout, stderr: stderr}, []string{"abandon", "--state", dir})
			}()
			select {
			case <-stderr.asked:
			case code := <-done:
				t.Fatalf("abandon ended (exit %d) without asking; stderr:\n%s", code, stderr.String())
			}
			tc.meanwhile(t, other)
			_, err = io.WriteString(answerW, "y\n")
			require.NoError(t, err)
			code := <-done
			answerW.Close()

			out := stdout.w.String()
			assert.Equal(t, tc.code, code, "exit status; stdout:\n%s\nstderr:\n%s", out, stderr.String())
			if tc.code == exitOK {
				assert.Contains(t, out, tc.says)
			} else {
				assert.Contains(t, stderr.String(), tc.says)
				assert.Contains(t, stderr.String(), "nothing was abandoned")
				assert.Contains(t, stderr.String(), "hopdag abandon --state "+dir, "the refusal says what to run")
			}
			assert.NotContains(t, stderr.String(), "acquire", "library advice")
			st, err := other.Load(context.Background())
			require.NoError(t, err)
			assert.Equal(t, tc.phase, st.Phase, "the status in %s", dir)
		})
	}
}
