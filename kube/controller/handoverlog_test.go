package controller_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/hopdag/hopdag/record"
)

// handover is one test's processes and their shared log.
type handover struct {
	t          *testing.T
	ns, kc, lg string
}

func newHandover(t *testing.T) (*handover, client.Client, client.ObjectKey) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	user, err := testEnv.ControlPlane.AddUser(envtest.User{Name: "operator", Groups: []string{"system:masters"}}, nil)
	require.NoError(t, err)
	kc, err := user.KubeConfig()
	require.NoError(t, err)
	dir := t.TempDir()
	h := &handover{t: t, ns: ns, kc: filepath.Join(dir, "kubeconfig"), lg: filepath.Join(dir, "components.log")}
	require.NoError(t, os.WriteFile(h.kc, kc, 0o600))
	t.Cleanup(func() {
		if data, err := os.ReadFile(h.lg); err == nil && t.Failed() {
			t.Logf("the controllers' log:\n%s", data)
		}
	})
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(context.Background(), cv))
	return h, c, client.ObjectKeyFromObject(cv)
}

// proc is a controller process.
type proc struct {
	cmd    *exec.Cmd
	pid    string
	exited chan struct{} // closed when it ended; err is then its Wait error
	err    error
}

// gone reports whether the process ended.
func (p *proc) gone() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// start runs a controller process.
func (h *handover) start(self string, delay time.Duration) *proc {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+h.kc, envNamespace+"="+h.ns, envLog+"="+h.lg, envSelfUpdate+"="+self, envDelay+"="+delay.String())
	cmd.Stderr = os.Stderr
	require.NoError(h.t, cmd.Start())
	p := &proc{cmd: cmd, pid: strconv.Itoa(cmd.Process.Pid), exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	h.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// entry is a line of the log.
type entry struct {
	verb string // start, done, begin, write or refresh
	what string // "HOP COMPONENT"; "TOKEN RESULT" for begin, write and refresh
	pid  string
	n    string // the number of a begin or write in its process
}

// token and result split the what of a write or refresh.
func (e entry) token() uint64 {
	n, _ := strconv.ParseUint(strings.Fields(e.what)[0], 10, 64)
	return n
}

func (e entry) result() string { return strings.Fields(e.what)[1] }

// lines reads the log in order.
func (h *handover) lines() []entry {
	f, err := os.Open(h.lg)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(h.t, err)
	defer f.Close()
	var out []entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text()) // verb, hop, component, time, pid[, n]
		e := entry{verb: f[0], what: f[1] + " " + f[2], pid: f[4]}
		if len(f) > 5 {
			e.n = f[5]
		}
		out = append(out, e)
	}
	return out
}

// waitForLine waits until a line after the log's first n satisfies ok, and
// returns its index.
func (h *handover) waitForLine(n int, timeout time.Duration, what string, ok func(entry) bool) int {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		lines := h.lines()
		for i := n; i < len(lines); i++ {
			if ok(lines[i]) {
				return i
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Fatalf("no %s within %v", what, timeout)
	return 0
}

// waitForStart waits until the log has a start line after its first n
// lines.
func (h *handover) waitForStart(n int, timeout time.Duration) {
	h.t.Helper()
	h.waitForLine(n, timeout, "controller started a component", func(e entry) bool { return e.verb == "start" })
}

// waitForDurable waits until more than n successes are durable.
func waitForDurable(t *testing.T, h *handover, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if len(durableSuccesses(t, h)) > n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no new success was recorded within %v", timeout)
}

// interleaved checks that the processes' lines never interleave: once a
// process's line follows another's, the other logs nothing more. It
// returns the first line that breaks this (-1 if none) and its process.
func interleaved(lines []entry) (int, string) {
	ended := map[string]bool{}
	for i, l := range lines {
		if ended[l.pid] {
			return i, l.pid
		}
		if i > 0 && lines[i-1].pid != l.pid {
			ended[lines[i-1].pid] = true
		}
	}
	return -1, ""
}

// acts keeps the lines of actions: component starts and ends, and
// accepted writes (a refused one is the fence at work, not an action).
func acts(lines []entry) []entry {
	var out []entry
	for _, l := range lines {
		if l.verb == "start" || l.verb == "done" || l.verb == "write" && l.result() == "ok" {
			out = append(out, l)
		}
	}
	return out
}

// staleWrite finds a successful write under a lower token than one that
// succeeded before it began (-1 if none): the record went back to a
// superseded holder. A write that began before the greater token's write
// returned may have landed before it (a paused leader's write in flight);
// a write without a begin line began at its own line.
func staleWrite(lines []entry) int {
	var top uint64
	topAt := -1 // the line of the first accepted write under top
	began := map[string]int{}
	for i, l := range lines {
		if l.verb == "begin" {
			began[l.pid+" "+l.n] = i
			continue
		}
		if l.verb != "write" || l.result() != "ok" {
			continue
		}
		switch b, ok := began[l.pid+" "+l.n]; {
		case l.token() > top:
			top, topAt = l.token(), i
		case l.token() == top:
		case !ok || l.n == "" || b > topAt:
			return i
		}
	}
	return -1
}

// assertOneAtATime asserts that the log shows one controller acting at a
// time and the record never written under a superseded token.
func assertOneAtATime(t *testing.T, lines []entry) {
	t.Helper()
	acted := acts(lines)
	if i, pid := interleaved(acted); i >= 0 {
		t.Errorf("process %s acted (action %d: %s %s) after another had started acting", pid, i+1, acted[i].verb, acted[i].what)
	}
	if i := staleWrite(lines); i >= 0 {
		t.Errorf("line %d: the record was written under token %d after a greater token wrote it", i+1, lines[i].token())
	}
}

// killed reports whether p ended by SIGKILL.
func killed(p *proc) bool {
	ee, ok := errors.AsType[*exec.ExitError](p.err)
	if !ok {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// durableSuccesses reads the components recorded as succeeded in the run's
// kube/store record, as "HOP COMPONENT".
func durableSuccesses(t *testing.T, h *handover) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	s, err := newKubeStore(t, newClient(t), h.ns, "hopdag-cluster").Load(context.Background())
	require.NoError(t, err)
	if s == nil {
		return out
	}
	for hi, hop := range s.Hops {
		for _, cs := range hop.Components {
			if cs.Phase == record.Succeeded {
				out[fmt.Sprintf("%d %s", hi, cs.Name)] = true
			}
		}
	}
	return out
}
