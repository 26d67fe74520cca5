package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The etcd the etcd:// tests use: HOPDAG_ETCD names its binary (tools/env.sh
// builds it), started once on 127.0.0.1 and stopped by TestMain.

const etcdEnv = "HOPDAG_ETCD"

var etcdServer struct {
	once     sync.Once
	endpoint string
	cmd      *exec.Cmd
	dir      string
	err      error
}

// etcdEndpoint returns host:port of the shared server, skipping the test
// without one (failing it with CI=true).
func etcdEndpoint(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(etcdEnv)
	if bin == "" {
		msg := etcdEnv + " is not set: the etcd:// tests need an etcd server: eval \"$(tools/env.sh etcd)\" at the repository root, then go test again"
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip(msg)
	}
	etcdServer.once.Do(func() { etcdServer.err = startEtcd(bin) })
	if etcdServer.err != nil {
		t.Fatal(etcdServer.err)
	}
	return etcdServer.endpoint
}

func startEtcd(bin string) error {
	dir, err := os.MkdirTemp("", "hopdag-cli-etcd-")
	if err != nil {
		return err
	}
	etcdServer.dir = dir
	// Two free ports; a port can be taken between this probe and etcd's
	// bind, which fails the start loudly rather than flaking silently.
	var ports []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		ports = append(ports, l.Addr().String())
		l.Close()
	}
	client, peer := "http://"+ports[0], "http://"+ports[1]
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "--name", "hopdag-cli", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "hopdag-cli="+peer, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	etcdServer.cmd = cmd
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, client+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				etcdServer.endpoint = ports[0]
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
	return fmt.Errorf("%s was not healthy after a minute: %s", bin, b)
}

func stopEtcd() {
	if etcdServer.cmd != nil {
		etcdServer.cmd.Process.Kill()
		etcdServer.cmd.Wait()
	}
	if etcdServer.dir != "" {
		os.RemoveAll(etcdServer.dir)
	}
}
