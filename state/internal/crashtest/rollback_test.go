package crashtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
)

// TestCrashRollback kills, with SIGKILL, an upgrade whose last hop fails
// and is rolled back with the whole run (RollbackRun), at random moments
// of the upgrade and of the rollback, until at least 10 kills landed
// during the rollback. Every round must end RolledBack, every component
// that ran rolled back, dependents before their dependencies, and no
// component rolled back again once the status on disk recorded it
// RolledBack.
func TestCrashRollback(t *testing.T) {
	rng := crashRand(t, 2)
	catalog, err := filepath.Abs("../../../testdata/catalog")
	require.NoError(t, err)
	during, total := 0, 0
	for r := 0; during < 10; r++ {
		require.Less(t, r, 40, "fewer than 10 kills during rollback in 40 rounds")
		rd := newRound(t)
		rd.progressLog = filepath.Join(t.TempDir(), "rollbacks.log")
		cfg := Config{Catalog: catalog, Dir: rd.dir, Log: rd.log, Delay: 5 * time.Millisecond, TTL: 5 * time.Second,
			RollbackLog: rd.progressLog}
		plan, err := cfg.Plan()
		require.NoError(t, err)
		last := plan.Hops[len(plan.Hops)-1].Graph
		cfg.Fail = last.Node(last.Len() / 2).Name

		rolledAt := map[key]int{}
		kills := 0
		for {
			require.Less(t, kills, 1000, "no progress in 1000 restarts")
			k := kill{lines: rd.lines(t) + 1 + rng.IntN(6), delay: time.Duration(rng.Int64N(int64(10 * time.Millisecond)))}
			finished, _ := rd.start(t, cfg, k)
			if finished {
				break
			}
			kills++
			st := rd.load(t)
			if st == nil {
				continue
			}
			back := rollbackLines(t, rd.progressLog)
			rolling := false
			for h, hs := range st.Hops {
				rolling = rolling || hs.Phase == record.RollingBack || hs.Phase == record.RolledBack
				for _, c := range hs.Components {
					if _, seen := rolledAt[key{h, c.Name}]; c.Phase == record.RolledBack && !seen {
						rolledAt[key{h, c.Name}] = len(back)
					}
				}
			}
			if rolling {
				during++
			}
		}
		total += kills
		st := rd.load(t)
		require.NotNil(t, st)
		assert.Equal(t, record.RolledBack, st.Phase, "round %d: run phase (%s)", r+1, st.Message)
		back := rollbackLines(t, rd.progressLog)
		lastAt := map[key]int{}
		for i, k := range back {
			if at, ok := rolledAt[k]; ok && i >= at {
				t.Errorf("round %d: %s rolled back again (rollback log line %d) after the status recorded it RolledBack", r+1, k, i+1)
			}
			lastAt[k] = i
		}
		for h, hs := range st.Hops {
			assert.Equal(t, record.RolledBack, hs.Phase, "round %d: hop %d phase", r+1, h+1)
			g := plan.Hops[h].Graph
			for i, c := range hs.Components {
				k := key{h, c.Name}
				if c.Attempts == 0 {
					continue
				}
				assert.Equal(t, record.RolledBack, c.Phase, "round %d: %s", r+1, k)
				_, ok := lastAt[k]
				assert.True(t, ok, "round %d: %s ran and was never rolled back", r+1, k)
				for _, d := range g.Dependents(i) {
					dk := key{h, g.Node(d).Name}
					if at, ok := lastAt[dk]; ok {
						assert.Less(t, at, lastAt[k], "round %d: dependent %s rolled back after %s", r+1, dk, k)
					}
				}
			}
		}
	}
	t.Logf("%d kills, %d of them during the rollback", total, during)
}

// rollbackLines parses the rollback log.
func rollbackLines(t *testing.T, path string) []key {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []key
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		var k key
		f := strings.Fields(line)
		require.Len(t, f, 2, "rollback log line %q", line)
		k.name = f[1]
		k.hop = int(f[0][0] - '0')
		out = append(out, k)
	}
	return out
}
