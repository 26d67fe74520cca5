package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/etcdstore"
)

// backend is where a run's status lives, opened from --state: a store, its
// lock, and how to name it in messages.
type backend struct {
	store state.Store
	lock  state.Lock
	// where names the status for people: a file, or a URL.
	where string
	close func() error
	// absent, when set, says why there may be no status at where (for
	// kube://, a namespace that does not exist), or "".
	absent func(ctx context.Context) string
}

// whyAbsent is b.absent's answer, or "".
func (b *backend) whyAbsent(ctx context.Context) string {
	if b.absent == nil {
		return ""
	}
	return b.absent(ctx)
}

// leaseTTL is the default lease of a hopdag process on a state's lock (run
// --lease-ttl; lockwait.go says what it decides); the keeper
// refreshes it every third of that.
const leaseTTL = 15 * time.Second

// etcdDialTimeout bounds the wait for an etcd endpoint.
const etcdDialTimeout = 5 * time.Second

// etcdReachTimeout bounds the check, when --state is opened, that an etcd
// endpoint answers: a TCP connection, then etcd's status.
const etcdReachTimeout = 3 * time.Second

// openState opens --state: a directory (a state.File store, created if
// missing; opened read-only, state.OpenFileReadOnly, for a command that
// only reads: writesState), etcd://host:port[,host:port...]/prefix (package
// state/etcdstore, keys under /prefix/; refused at once unless one of its
// endpoints answers: reachEtcd), or kube://namespace/name (the
// Kubernetes store, when this hopdag is built with it).
func (c *cli) openState(ctx context.Context, spec string) (*backend, error) {
	scheme, rest, isURL := strings.Cut(spec, "://")
	if !isURL {
		if err := checkStateDir(spec); err != nil {
			return nil, err
		}
		if c.name != "run" {
			// Only run creates a state directory; the others read one.
			if _, err := os.Stat(spec); err != nil {
				return nil, fmt.Errorf("no status in %s: %w", spec, err) // matches fs.ErrNotExist
			}
		}
		if !c.writesState() {
			// No lock file, no writes: a directory this user may only
			// read, or a read-only mount, will do.
			f, err := state.OpenFileReadOnly(spec)
			if err != nil {
				return nil, err
			}
			return &backend{store: f, lock: f, where: spec, close: f.Close}, nil
		}
		f, err := state.OpenFile(spec)
		if err != nil {
			return nil, err
		}
		return &backend{store: f, lock: f, where: spec, close: f.Close}, nil
	}
	switch scheme {
	case "etcd":
		endpoints, prefix, err := parseEtcdURL(spec)
		if err != nil {
			return nil, err
		}
		// The client's own log (JSON, on stderr) says nothing the errors
		// do not.
		cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: etcdDialTimeout, Logger: zap.NewNop()})
		if err != nil {
			return nil, fmt.Errorf("--state %s: %w", spec, err)
		}
		if err := reachEtcd(ctx, cli, endpoints); err != nil {
			cli.Close()
			return nil, fmt.Errorf("--state %s: %w", spec, err)
		}
		s := etcdstore.New(cli, prefix)
		return &backend{store: s, lock: s, where: spec, close: cli.Close}, nil
	case "kube":
		ns, name, ok := strings.Cut(rest, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("--state %s: want kube://namespace/name", spec)
		}
		if c.kube.Store == nil {
			return nil, fmt.Errorf("--state %s: this hopdag has no Kubernetes state store (kube/store); use a directory or etcd://", spec)
		}
		return c.kube.Store(c.kubeConfig(), ns, name)
	}
	return nil, fmt.Errorf("--state %s: unknown scheme %q: want a directory, etcd://host:port/prefix or kube://namespace/name", spec, scheme)
}

// writesState reports whether the command writes --state: run,
// rollback, abandon and approve take its lock and save the status; the others (status)
// only read it, and open a directory read-only.
func (c *cli) writesState() bool {
	switch c.name {
	case "run", "rollback", "abandon", "approve":
		return true
	}
	return false
}

// reachEtcd checks that one of the endpoints of cli answers, within
// etcdReachTimeout: the client would retry an endpoint that refuses
// connections until each request's deadline (20s), and say only
// "context deadline exceeded". It tries a TCP connection to each endpoint
// first, whose error says why plainly (connection refused, no route),
// then asks the endpoints that accept one for etcd's status.
func reachEtcd(ctx context.Context, cli *clientv3.Client, endpoints []string) error {
	ctx, cancel := context.WithTimeout(ctx, etcdReachTimeout)
	defer cancel()
	var (
		open []string
		errs []string
		d    net.Dialer
	)
	for _, ep := range endpoints {
		conn, err := d.DialContext(ctx, "tcp", ep)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		conn.Close()
		open = append(open, ep)
	}
	for _, ep := range open {
		if _, err := cli.Status(ctx, ep); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", ep, err))
			continue
		}
		return nil
	}
	if interruptedBy(ctx) != nil {
		return context.Cause(ctx)
	}
	return fmt.Errorf("etcd at %s is unreachable: %s", strings.Join(endpoints, ", "), strings.Join(errs, "; "))
}

// load reads the status with a timeout, so that an unreachable etcd says so.
func (b *backend) load(ctx context.Context) (*record.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, etcdDialTimeout+leaseTTL)
	defer cancel()
	st, err := b.store.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.where, err)
	}
	return st, nil
}

// located is b's store as state.Run and state.Approve use it: Load is
// b.load (a timeout, the error naming where), and a Save's error names
// where too; Commit is the store's.
type located struct{ b *backend }

func (l located) Load(ctx context.Context) (*record.Status, error) { return l.b.load(ctx) }

func (l located) Save(ctx context.Context, token uint64, s *record.Status) error {
	if err := l.b.store.Save(ctx, token, s); err != nil {
		return fmt.Errorf("%s: %w", l.b.where, err)
	}
	return nil
}

func (l located) Commit(ctx context.Context, token uint64, s *record.Status, changed []record.Ref) error {
	return l.b.store.Commit(ctx, token, s, changed)
}

// holder names this process on a lock: "host/pid", and what it does.
func holder(what string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d (%s)", host, os.Getpid(), what)
}

// urlScheme is what starts a mistyped URL: a scheme and a colon.
var urlScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]+):`)

// checkStateDir refuses a --state without "://" that reads as a mistyped
// URL rather than a directory: one whose scheme is a known one (etcd:,
// kube:, in any case), or any other scheme followed by a "/" (s3:/x).
// Such a spec would otherwise become a directory of that name; a directory
// that really has such a name is given as ./NAME.
func checkStateDir(spec string) error {
	m := urlScheme.FindStringSubmatch(spec)
	if m == nil {
		return nil
	}
	dir := fmt.Sprintf("(a directory of that name: ./%s)", spec)
	switch strings.ToLower(m[1]) {
	case "etcd":
		return fmt.Errorf("--state %s: want etcd://host:port/prefix %s", spec, dir)
	case "kube":
		return fmt.Errorf("--state %s: want kube://namespace/name %s", spec, dir)
	}
	if strings.HasPrefix(spec[len(m[0]):], "/") {
		return fmt.Errorf("--state %s: a URL needs \"//\" after its scheme; want a directory, etcd://host:port/prefix or kube://namespace/name %s", spec, dir)
	}
	return nil
}

// parseEtcdURL reads etcd://host:port[,host:port...]/prefix: the endpoints,
// and the key prefix of the run, "/prefix/".
func parseEtcdURL(spec string) (endpoints []string, prefix string, err error) {
	u, err := url.Parse(spec)
	if err != nil {
		return nil, "", fmt.Errorf("--state %s: %w", spec, err)
	}
	p := strings.Trim(u.Path, "/")
	if u.Scheme != "etcd" || u.Host == "" || p == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, "", fmt.Errorf("--state %s: want etcd://host:port/prefix (the prefix names the run, e.g. etcd://127.0.0.1:2379/hopdag/prod)", spec)
	}
	for _, e := range strings.Split(u.Host, ",") {
		if e == "" {
			return nil, "", fmt.Errorf("--state %s: an empty endpoint", spec)
		}
		endpoints = append(endpoints, e)
	}
	return endpoints, "/" + p + "/", nil
}
