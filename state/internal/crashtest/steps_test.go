package crashtest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
)

// TestCrashSteps kills, with SIGKILL, an upgrade whose components go
// through three steps (Task.Enter), until at least 10 kills landed. A
// step the status on disk recorded is where the component continues:
// no step before it runs again, nothing runs once it Succeeded, and every
// component ends Succeeded with every step run, in order.
func TestCrashSteps(t *testing.T) {
	rng := crashRand(t, 3)
	catalog, err := filepath.Abs("../../../testdata/catalog")
	require.NoError(t, err)
	steps := []string{"drain", "upgrade", "rollout"}
	type floor struct{ at, min int } // from step-log line at, no step below min
	total := 0
	for r := 0; total < 10; r++ {
		require.Less(t, r, 20, "fewer than 10 kills in 20 rounds")
		rd := newRound(t)
		rd.progressLog = filepath.Join(t.TempDir(), "steps.log")
		cfg := Config{Catalog: catalog, Dir: rd.dir, Log: rd.log, Delay: 3 * time.Millisecond, TTL: 5 * time.Second,
			Steps: steps, StepLog: rd.progressLog}
		floors := map[key][]floor{}
		doneAt := map[key]int{}
		for kills := 0; ; kills++ {
			require.Less(t, kills, 1000, "no progress in 1000 restarts")
			k := kill{lines: rd.lines(t) + 1 + rng.IntN(8), delay: time.Duration(rng.Int64N(int64(8 * time.Millisecond)))}
			if finished, _ := rd.start(t, cfg, k); finished {
				break
			}
			total++
			st := rd.load(t)
			if st == nil {
				continue
			}
			n := len(stepLines(t, rd.progressLog))
			for h, hs := range st.Hops {
				for _, c := range hs.Components {
					kk := key{h, c.Name}
					if _, ok := doneAt[kk]; c.Phase == record.Succeeded && !ok {
						doneAt[kk] = n
					}
					if i := slices.Index(steps, c.Step); i > 0 {
						floors[kk] = append(floors[kk], floor{n, i})
					}
				}
			}
		}
		st := rd.load(t)
		require.NotNil(t, st)
		assert.Equal(t, record.Succeeded, st.Phase, "round %d", r+1)
		lines := stepLines(t, rd.progressLog)
		last := map[key][]int{}
		for i, l := range lines {
			if at, ok := doneAt[l.key]; ok && i >= at {
				t.Errorf("round %d: %s step %s ran (step log line %d) after the status recorded it Succeeded", r+1, l.key, steps[l.step], i+1)
			}
			for _, f := range floors[l.key] {
				if i >= f.at && l.step < f.min {
					t.Errorf("round %d: %s ran step %s (step log line %d) after the status recorded it at step %s", r+1, l.key, steps[l.step], i+1, steps[f.min])
				}
			}
			if last[l.key] == nil {
				last[l.key] = []int{-1, -1, -1}
			}
			last[l.key][l.step] = i
		}
		for h, hs := range st.Hops {
			for _, c := range hs.Components {
				kk := key{h, c.Name}
				assert.Equal(t, record.Succeeded, c.Phase, "round %d: %s", r+1, kk)
				l := last[kk]
				require.NotNil(t, l, "round %d: %s ran no step", r+1, kk)
				assert.True(t, l[0] >= 0 && l[0] < l[1] && l[1] < l[2], "round %d: %s steps out of order or missing (last lines %v)", r+1, kk, l)
			}
		}
	}
	t.Logf("%d kills", total)
}

type stepLine struct {
	key
	step int
}

func stepLines(t *testing.T, path string) []stepLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []stepLine
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		require.Len(t, f, 3, "step log line %q", line)
		h, err := strconv.Atoi(f[0])
		require.NoError(t, err)
		out = append(out, stepLine{key{h, f[1]}, slices.Index([]string{"drain", "upgrade", "rollout"}, f[2])})
	}
	return out
}
