package crashtest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/record"
)

// TestCrashPhases kills, with SIGKILL, upgrades whose components go
// through phases that the library itself runs (components.Router), until
// at least 10 kills landed in each case (see crashPhases for what each
// round checks).
func TestCrashPhases(t *testing.T) {
	for _, tc := range []struct {
		name    string
		catalog string
		phases  []string
		stream  uint64 // of crashRand
	}{
		// Inline components whose handlers are components.Phases, run by
		// components.Inline. NeedsUpgrade reports the upgrade needed
		// until the component's Upgrade completed, as a real system
		// would: an attempt that ran NeedsUpgrade again after that would
		// be Skipped "already at target" and never run PostUpgrade (the
		// defect of issue 17).
		{"inline", "testdata/inline", []string{
			components.StepNeedsUpgrade, components.StepPreUpgrade, components.StepUpgrade, components.StepPostUpgrade,
		}, 4},
		// Components with declared lifecycle phases
		// (ComponentVersion.Phases), which components.Router runs
		// itself: drain and rollout are steps of a components.Steps
		// handler, upgrade a command phase components.Exec runs (sh
		// appends the phase's line, then sleeps).
		{"declared", "testdata/declared", []string{"drain", "upgrade", "rollout"}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) { crashPhases(t, tc.stream, tc.catalog, tc.phases) })
	}
}

// resume is what a kill left on disk of a component that had not
// Succeeded: from the phase-log line at on, it continues at phase from
// (the recorded step's index; 0 when it recorded none).
type resume struct {
	at, from int
	step     string // the recorded step
	attempt  int
}

// crashPhases kills the upgrade of the catalog in dir (v1.0 to v1.2, two
// hops), whose components go through phases, in rounds until at least 10
// kills landed, kills found components Running in each phase and, for
// inline handlers, an attempt past its completed Upgrade. After
// each kill it reads the status on disk. Each round checks, on top of
// round.check (every component Succeeded, run once more than the kills
// that cut an attempt short, never after it was recorded Succeeded):
//   - a component that had not Succeeded continues, after the kill, at
//     exactly the phase its record names (the first phase when none),
//     and no phase before it runs again;
//   - no phase runs for a component once the status recorded it
//     Succeeded;
//   - every component's phases run in order, none skipped: its first
//     line is the first phase, each line the phase after the previous
//     one or a resumption, its last line the last phase, and its record
//     names the last phase.
func crashPhases(t *testing.T, stream uint64, dir string, phases []string) {
	rng := crashRand(t, stream)
	catalog, err := filepath.Abs(dir)
	require.NoError(t, err)
	// hit counts, per phase, the attempts a kill found Running in it;
	// atTarget those a kill found past a completed Upgrade (the live
	// system at its target) but not Succeeded. For inline handlers, the
	// rounds go on until a kill found one: the moment a NeedsUpgrade run
	// again would skip the component.
	hit, atTarget := map[string]map[attempt]bool{}, map[attempt]bool{}
	needTarget := slices.Contains(phases, components.StepNeedsUpgrade)
	total, rounds := 0, 0
	for r := 0; total < 10 || len(hit) < len(phases) || needTarget && len(atTarget) == 0; r++ {
		require.Less(t, r, 20, "in 20 rounds: fewer than 10 kills, a phase no kill found a component in (%d of %d), or no kill after an Upgrade completed (%d)",
			len(hit), len(phases), len(atTarget))
		rounds++
		rd := newRound(t)
		rd.progressLog = filepath.Join(t.TempDir(), "phases.log")
		cfg := Config{Catalog: catalog, Dir: rd.dir, Log: rd.log, Delay: 3 * time.Millisecond, TTL: 5 * time.Second,
			PhaseLog: rd.progressLog, Live: filepath.Join(t.TempDir(), "live"), From: "v1.0", To: "v1.2"}
		resumes := map[key][]resume{}
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
			n := len(phaseLines(t, rd.progressLog, phases))
			live := liveSet(t, cfg.Live)
			for h, hs := range st.Hops {
				for _, c := range hs.Components {
					kk := key{h, c.Name}
					if c.Phase == record.Succeeded {
						if _, ok := doneAt[kk]; !ok {
							doneAt[kk] = n
						}
						continue
					}
					from := 0
					if c.Step != "" {
						from = slices.Index(phases, c.Step)
						require.GreaterOrEqual(t, from, 0, "%s: the status records step %q, not a phase of %v", kk, c.Step, phases)
					}
					// Between two kills that found the same attempt, the
					// component ran nothing: the first one is checked.
					if rs := resumes[kk]; len(rs) == 0 || rs[len(rs)-1].attempt != c.Attempts {
						resumes[kk] = append(rs, resume{at: n, from: from, step: c.Step, attempt: c.Attempts})
					}
					if c.Phase == record.Running && c.Step != "" {
						if hit[c.Step] == nil {
							hit[c.Step] = map[attempt]bool{}
						}
						hit[c.Step][attempt{kk, c.Attempts}] = true
					}
					if live[kk] {
						atTarget[attempt{kk, c.Attempts}] = true
					}
				}
			}
		}
		rd.check(t, cfg)
		checkPhases(t, r+1, rd, phases, resumes, doneAt)
	}
	counts := make([]string, len(phases))
	for i, p := range phases {
		counts[i] = fmt.Sprintf("%s %d", p, len(hit[p]))
	}
	t.Logf("%d kills in %d rounds; attempts a kill found Running in each phase: %s", total, rounds, strings.Join(counts, ", "))
	if needTarget {
		t.Logf("%d attempts a kill found at their target (Upgrade completed) but not Succeeded", len(atTarget))
	}
}

// checkPhases checks the phase log of a finished round.
func checkPhases(t *testing.T, round int, rd *round, phases []string, resumes map[key][]resume, doneAt map[key]int) {
	t.Helper()
	st := rd.load(t)
	require.NotNil(t, st)
	lines := phaseLines(t, rd.progressLog, phases)
	at := map[key][]int{} // per component, its lines' indexes
	for i, l := range lines {
		if d, ok := doneAt[l.key]; ok && i >= d {
			t.Errorf("round %d: %s ran phase %s (phase log line %d) after the status recorded it Succeeded", round, l.key, phases[l.step], i+1)
		}
		at[l.key] = append(at[l.key], i)
	}
	for kk, rs := range resumes {
		for _, rs := range rs {
			j, _ := slices.BinarySearch(at[kk], rs.at)
			if j == len(at[kk]) {
				t.Errorf("round %d: %s ran no phase after a kill left it to continue at phase %s (recorded step %q, attempt %d)", round, kk, phases[rs.from], rs.step, rs.attempt)
				continue
			}
			if got := lines[at[kk][j]].step; got != rs.from {
				t.Errorf("round %d: %s continued at phase %s (phase log line %d) after a kill left it to continue at phase %s (recorded step %q, attempt %d)",
					round, kk, phases[got], at[kk][j]+1, phases[rs.from], rs.step, rs.attempt)
				continue
			}
			for _, i := range at[kk][j:] {
				if lines[i].step < rs.from {
					t.Errorf("round %d: %s ran phase %s again (phase log line %d) after a kill left it to continue at phase %s (recorded step %q, attempt %d)",
						round, kk, phases[lines[i].step], i+1, phases[rs.from], rs.step, rs.attempt)
					break
				}
			}
		}
	}
	last := len(phases) - 1
	for h, hs := range st.Hops {
		for _, c := range hs.Components {
			kk := key{h, c.Name}
			require.Equal(t, record.Succeeded, c.Phase, "round %d: %s (reason %q, error %q)", round, kk, c.Reason, c.Error)
			assert.Equal(t, phases[last], c.Step, "round %d: %s's recorded step", round, kk)
			is := at[kk]
			require.NotEmpty(t, is, "round %d: %s ran no phase", round, kk)
			seq := make([]string, len(is))
			for j, i := range is {
				seq[j] = phases[lines[i].step]
			}
			ok := lines[is[0]].step == 0 && lines[is[len(is)-1]].step == last
			for j := 1; j < len(is); j++ {
				ok = ok && lines[is[j]].step <= lines[is[j-1]].step+1
			}
			assert.True(t, ok, "round %d: %s's phases are not %v in order, each resumed at most where it stopped, ending with %s: %v",
				round, kk, phases, phases[last], seq)
		}
	}
}

type phaseLine struct {
	key
	step int
}

// phaseLines parses the phase log: "hop component phase" lines.
func phaseLines(t *testing.T, path string, phases []string) []phaseLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []phaseLine
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" && i == 0 {
			continue
		}
		f := strings.Fields(line)
		require.Len(t, f, 3, "phase log line %d: %q", i+1, line)
		h, err := strconv.Atoi(f[0])
		require.NoError(t, err, "phase log line %d: %q", i+1, line)
		step := slices.Index(phases, f[2])
		require.GreaterOrEqual(t, step, 0, "phase log line %d: %q: not a phase of %v", i+1, line, phases)
		out = append(out, phaseLine{key{h, f[1]}, step})
	}
	return out
}

// liveSet reads the live system: the components whose Upgrade completed.
func liveSet(t *testing.T, path string) map[key]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	out := map[key]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		h, err := strconv.Atoi(f[0])
		require.NoError(t, err, "live line %q", line)
		out[key{h, f[1]}] = true
	}
	return out
}
