package bundle

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/notaryproject/notation-go"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// Client pushes, pulls, exports and copies bundles. Its zero value is not
// usable: make one with New. A Client is safe for concurrent use.
type Client struct {
	plainHTTP    bool
	dockerConfig string
	httpClient   *http.Client
	cacheDir     string
	fallback     bool
	signKey      crypto.PrivateKey
	signCerts    []*x509.Certificate
	verifyCerts  []*x509.Certificate
	verification Verification
	logger       *slog.Logger

	once     sync.Once
	creds    credentials.Store
	credsErr error
	cacheMu  sync.Mutex
	cache    *oci.Store
	memoMu   sync.Mutex
	memo     []memoEntry // the catalogs loaded last, oldest first
}

// Option configures New.
type Option func(*Client)

// New returns a Client: credentials from the Docker config file, plain HTTP
// for localhost only, no cache, no signing, no verification.
func New(opts ...Option) *Client {
	c := &Client{logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(c)
	}
	return c
}

// WithPlainHTTP talks plain HTTP to every registry, not only to localhost.
func WithPlainHTTP() Option { return func(c *Client) { c.plainHTTP = true } }

// WithDockerConfig reads credentials from this Docker config file instead
// of the default (~/.docker/config.json, or $DOCKER_CONFIG/config.json).
func WithDockerConfig(file string) Option { return func(c *Client) { c.dockerConfig = file } }

// WithHTTPClient sends registry requests through hc (default: oras-go's
// client, which retries on connection errors with backoff).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.httpClient = hc } }

// WithCache keeps pulled bundles (and their signatures) in an OCI image
// layout at dir, created if missing.
func WithCache(dir string) Option { return func(c *Client) { c.cacheDir = dir } }

// WithCacheFallback lets Pull use the cached bundle when the registry is
// unreachable (needs WithCache).
func WithCacheFallback() Option { return func(c *Client) { c.fallback = true } }

// WithSigningKey signs what Push pushes with key and its certificate chain
// (the signing certificate first).
func WithSigningKey(key crypto.PrivateKey, certs []*x509.Certificate) Option {
	return func(c *Client) { c.signKey, c.signCerts = key, certs }
}

// WithVerifyKey makes Pull, Export and Copy check signatures against certs
// (self-signed signing certificates, or the roots of their chains): with
// VerifyRequired an unsigned bundle is refused too.
func WithVerifyKey(v Verification, certs ...*x509.Certificate) Option {
	return func(c *Client) { c.verification, c.verifyCerts = v, certs }
}

// WithLogger logs pulls, cache use and fallbacks (default, and nil:
// discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *Client) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.logger = l
	}
}

// repository opens a registry repository with credentials and the
// transport's rules.
func (c *Client) repository(loc Location) (*remote.Repository, error) {
	repo, err := remote.NewRepository(loc.Registry + "/" + loc.Repository)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrReference, err)
	}
	repo.PlainHTTP = c.plainHTTP || isLocalhost(loc.Registry)
	c.once.Do(func() {
		if c.dockerConfig != "" {
			c.creds, c.credsErr = credentials.NewStore(c.dockerConfig, credentials.StoreOptions{})
		} else {
			c.creds, c.credsErr = credentials.NewStoreFromDocker(credentials.StoreOptions{})
		}
	})
	if c.credsErr != nil {
		return nil, fmt.Errorf("reading the Docker config for credentials: %w", c.credsErr)
	}
	hc := c.httpClient
	if hc == nil {
		hc = retry.DefaultClient
	}
	repo.Client = &auth.Client{Client: hc, Cache: auth.NewCache(), Credential: credentials.Credential(c.creds)}
	return repo, nil
}

// store opens the cache, or a memory store when there is no cache.
func (c *Client) store(ctx context.Context) (oras.GraphTarget, error) {
	if c.cacheDir == "" {
		return memory.New(), nil
	}
	c.cacheMu.Lock()
	defer c.cacheMu.Unlock()
	if c.cache == nil {
		s, err := openCache(ctx, c.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("opening the cache %s: %w", c.cacheDir, err)
		}
		c.cache = s
	}
	return c.cache, nil
}

// layout opens an OCI image layout read-only: a directory or a tarball.
func layout(ctx context.Context, p string) (oras.ReadOnlyGraphTarget, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("OCI layout: %w", err)
	}
	if fi.IsDir() {
		return oci.NewFromFS(ctx, os.DirFS(p))
	}
	return oci.NewFromTar(ctx, p)
}

// source opens where loc points, for reading.
func (c *Client) source(ctx context.Context, loc Location) (oras.ReadOnlyGraphTarget, error) {
	if loc.Layout != "" {
		return layout(ctx, loc.Layout)
	}
	return c.repository(loc)
}

// signer returns the configured signer, or nil.
func (c *Client) signer() (notation.Signer, error) {
	if c.signKey == nil {
		return nil, nil
	}
	return newSigner(c.signKey, c.signCerts)
}

// unreachable reports whether err means the registry could not be
// reached at all, as opposed to answering with an error: a refused or
// reset connection, DNS, a timeout, or a gateway's 502, 503 or 504.
func unreachable(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var er *errcode.ErrorResponse
	if errors.As(err, &er) {
		// A gateway (an ingress, a load balancer) in front of a registry
		// that is down answers for it.
		switch er.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
	}
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Op, "dial")
}
