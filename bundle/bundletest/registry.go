// Package bundletest starts a real OCI registry (the CNCF distribution
// registry that tools/env.sh builds) on 127.0.0.1 for tests of the bundle
// package and of the hopdag CLI.
package bundletest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Registry is a CNCF distribution registry on 127.0.0.1 with its own
// storage directory, started by the test and stopped when it ends.
type Registry struct {
	Addr    string // host:port
	Storage string // the filesystem driver's root directory
	config  string
	cmd     *exec.Cmd
}

// Binary returns $HOPDAG_REGISTRY, or skips (fails with CI=true)
// saying how to build it.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("HOPDAG_REGISTRY")
	if bin == "" {
		msg := `HOPDAG_REGISTRY is not set: build the registry with eval "$(tools/env.sh registry)" from the repository root`
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// Start starts a registry on a free port of 127.0.0.1.
func Start(t testing.TB) *Registry { return start(t, "", "") }

// StartAuth starts a registry that asks for HTTP basic authentication as
// user with password (an htpasswd file with a bcrypt hash).
func StartAuth(t testing.TB, user, password string) *Registry { return start(t, user, password) }

func start(t testing.TB, user, password string) *Registry {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	r := &Registry{Addr: addr, Storage: filepath.Join(dir, "storage"), config: filepath.Join(dir, "config.yml")}
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, r.Storage, addr)
	if user != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: hopdag-test\n    path: %s\n", htpasswd)
	}
	if err := os.WriteFile(r.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r.start(t, bin)
	t.Cleanup(r.Stop)
	return r
}

func (r *Registry) start(t testing.TB, bin string) {
	t.Helper()
	r.cmd = exec.Command(bin, "serve", r.config)
	// The registry logs every 404 (oras-go probes for blobs before it
	// pushes them) as an error: keep its log in a file, shown on failure.
	logFile, err := os.OpenFile(r.config+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	t.Cleanup(func() {
		if t.Failed() {
			if data, err := os.ReadFile(r.config + ".log"); err == nil && len(data) > 0 {
				t.Logf("registry log:\n%s", lastLines(string(data), 20))
			}
		}
	})
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("starting the registry %s: %v", bin, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Addr+"/v2/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return
			}
		}
		select {
		case <-ctx.Done():
			r.Stop()
			t.Fatalf("the registry on %s did not answer within 30 s: %v", r.Addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop stops the registry (idempotent).
func (r *Registry) Stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Ref is oci://ADDR/repo:tag.
func (r *Registry) Ref(repoTag string) string { return "oci://" + r.Addr + "/" + repoTag }

// BlobPath is where the registry's filesystem driver keeps a blob (to
// tamper with it).
func (r *Registry) BlobPath(dgst string) string {
	hex := dgst[len("sha256:"):]
	return filepath.Join(r.Storage, "docker", "registry", "v2", "blobs", "sha256", hex[:2], hex, "data")
}
