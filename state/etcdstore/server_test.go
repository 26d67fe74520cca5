package etcdstore_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdEnv names the etcd server binary the tests start.
const etcdEnv = "HOPDAG_ETCD"

// howToGet says how to get a server.
const howToGet = etcdEnv + " is not set: the etcd tests need an etcd server binary. " +
	"Build one with tools/env.sh (about 2 minutes the first time): " +
	"eval \"$(tools/env.sh etcd)\"; cd state/etcdstore && go test ./... (a module of its own), or point " + etcdEnv + " at an installed etcd (Debian: etcd-server)"

// server is the etcd the package's tests share, started on first use on
// 127.0.0.1 with a temporary data dir and stopped by TestMain. Each test
// works under its own key prefix.
var server struct {
	once     sync.Once
	endpoint string
	cmd      *exec.Cmd
	exited   chan struct{}
	dir      string
	missing  bool
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if server.cmd != nil {
		server.cmd.Process.Kill()
		<-server.exited
	}
	if server.dir != "" {
		os.RemoveAll(server.dir)
	}
	os.Exit(code)
}

// client returns a client of the shared server. Without a server it skips
// the test, or fails it in CI (CI=true).
func client(tb testing.TB) *clientv3.Client {
	tb.Helper()
	server.once.Do(start)
	if server.missing {
		if os.Getenv("CI") == "true" {
			tb.Fatal("CI=true: " + howToGet)
		}
		tb.Skip(howToGet)
	}
	if server.err != nil {
		tb.Fatal(server.err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{server.endpoint}, DialTimeout: 30 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cli.Close() })
	return cli
}

func start() {
	bin := os.Getenv(etcdEnv)
	if bin == "" {
		server.missing = true
		return
	}
	dir, err := os.MkdirTemp("", "hopdag-etcd-")
	if err != nil {
		server.err = err
		return
	}
	server.dir = dir
	// A free port can be taken between our probe and etcd's bind: try a
	// few times.
	for try := range 3 {
		if server.err = run(bin, filepath.Join(dir, fmt.Sprint(try))); server.err == nil {
			return
		}
	}
}

// run starts etcd and waits, generously, until it is healthy.
func run(bin, dir string) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	client, peer := "http://"+ports[0], "http://"+ports[1]
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	logf, err := os.Create(dir + ".log")
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--name", "hopdag-test", "--data-dir", dir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "hopdag-test="+peer, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			b, _ := os.ReadFile(dir + ".log")
			return fmt.Errorf("%s exited: %s", bin, b)
		case <-time.After(50 * time.Millisecond):
		}
		if healthy(client) {
			server.cmd, server.exited, server.endpoint = cmd, exited, ports[0]
			return nil
		}
	}
	cmd.Process.Kill()
	<-exited
	return fmt.Errorf("%s was not healthy after a minute", bin)
}

func healthy(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	return resp.StatusCode == http.StatusOK && strings.Contains(b.String(), `"health":"true"`)
}

func freePorts(n int) ([]string, error) {
	var out []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}
