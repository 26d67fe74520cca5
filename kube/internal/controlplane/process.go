package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one binary the control plane runs, logging into NAME.log.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited; err is then set
	err  error
}

// createLog creates the log file NAME.log; Stop closes it.
func (c *ControlPlane) createLog(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(c.dir, name+".log"))
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	c.logs = append(c.logs, f)
	return f, nil
}

// start starts a binary with its output in NAME.log.
func (c *ControlPlane) start(name, path string, args ...string) (*process, error) {
	log, err := c.createLog(name)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "# %s %s\n", path, strings.Join(args, " "))
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("controlplane: start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	c.procs = append(c.procs, p)
	return p, nil
}

// poll calls ready every 100ms until it says true, the process exits (an
// error) or ctx ends (an error saying what was awaited).
func (p *process) poll(ctx context.Context, what string, ready func(context.Context) (bool, error)) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := ready(ctx)
		if err != nil {
			return fmt.Errorf("controlplane: %s: %w", p.name, err)
		}
		if ok {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("controlplane: %s exited while starting (%v): see %s.log", p.name, p.err, p.name)
		case <-ctx.Done():
			return fmt.Errorf("controlplane: %s: no %s before the start's deadline: %w", p.name, what, ctx.Err())
		case <-tick.C:
		}
	}
}

// waitHealthy polls https://127.0.0.1:port/healthz until it answers 200.
// The serving certificate is one the process made for itself: it is not
// verified.
func (p *process) waitHealthy(ctx context.Context, port int) error {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
	defer client.CloseIdleConnections()
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	return p.poll(ctx, "ok from "+url, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// stop sends SIGTERM, then SIGKILL after timeout, and waits for the exit.
// How a process ends once told to is not an error (kube-scheduler exits 1
// on SIGTERM); a process that had already exited is one, its exit status.
func (p *process) stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return fmt.Errorf("controlplane: %s exited before Stop (%v): see %s.log", p.name, p.err, p.name)
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}

// freePort returns a TCP port free on 127.0.0.1 now. Another process may
// take it before the caller binds it: the start then fails, naming it.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("controlplane: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Logs returns the directory of the logs and the last n lines of each
// log, in the order the processes started.
func (c *ControlPlane) Logs(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "control plane logs in %s; the last %d lines of each:", c.dir, n)
	for _, f := range c.logs {
		data, err := os.ReadFile(f.Name())
		if err != nil {
			fmt.Fprintf(&b, "\n== %s: %v", filepath.Base(f.Name()), err)
			continue
		}
		lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
		lines = lines[max(0, len(lines)-n):]
		fmt.Fprintf(&b, "\n== %s ==\n%s", filepath.Base(f.Name()), bytes.Join(lines, []byte("\n")))
	}
	return b.String()
}
