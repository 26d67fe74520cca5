package bundle_test

import (
	"context"
	"crypto"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/bundle"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

const catalogDir = "../testdata/catalog"

// keyPair is a signing key and its self-signed certificate.
type keyPair struct {
	key   crypto.PrivateKey
	certs []*x509.Certificate
}

func newKey(t testing.TB, name string) keyPair {
	t.Helper()
	kp, cp, err := bundle.GenerateKey(name, time.Hour)
	require.NoError(t, err)
	key, err := bundle.ParsePrivateKey(kp)
	require.NoError(t, err)
	certs, err := bundle.ParseCertificates(cp)
	require.NoError(t, err)
	return keyPair{key, certs}
}

// client is a bundle client with no retries (a stopped registry fails at
// once) and an empty Docker config.
func client(t testing.TB, opts ...bundle.Option) *bundle.Client {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(cfg, []byte("{}"), 0o600))
	base := []bundle.Option{bundle.WithDockerConfig(cfg), bundle.WithHTTPClient(&http.Client{Timeout: 10 * time.Second})}
	return bundle.New(append(base, opts...)...)
}

var (
	fromV = release.MustParseVersion("v26.06-rc.2")
	toV   = release.MustParseVersion("v26.09")
)

// planOf plans v26.06-rc.2 -> v26.09.
func planOf(t testing.TB, c *release.Catalog) *runner.Plan {
	t.Helper()
	p, err := runner.NewPlan(c, path.State{"": fromV}, path.State{"": toV})
	require.NoError(t, err, "NewPlan(%s, %s)", fromV, toV)
	return p
}

// copyDir copies a catalog directory so that a test can change it.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}

// executor runs fake with every hop check of p registered as passing.
func executor(p *runner.Plan, fake runner.Runner) *runner.Executor {
	var opts []runner.Option
	for _, h := range p.Hops {
		for _, c := range append(slices.Clone(h.PreChecks), h.PostChecks...) {
			opts = append(opts, runner.WithCheck(c.Name, func(context.Context, runner.CheckTask) error { return nil }))
		}
	}
	return runner.New(fake, opts...)
}
