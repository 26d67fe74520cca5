package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hopdag/hopdag/bundle"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
)

const bundleUsage = `Usage:
  hopdag bundle push   DIR REF [--sign-key KEY --sign-cert CERT]    push a catalog directory (validated first); prints the digest
  hopdag bundle pull   REF DIR [--verify-key CERT]                  pull, verify and validate a bundle into DIR
  hopdag bundle export REF FILE [--verify-key CERT]                 write the bundle and its signatures to an OCI layout (FILE.tar: a tarball)
  hopdag bundle copy   SRC DST [--verify-key CERT]                  copy a bundle and its signatures to another registry or layout
  hopdag bundle keygen NAME                                         write NAME.key and NAME.crt, a self-signed signing key

REF is oci://REGISTRY/REPOSITORY:TAG (or @sha256:DIGEST), or oci-layout://PATH[:TAG].
Every command that takes a catalog DIR also takes such a REF, with the flags below.
`

// bundleFlags are the flags of every command that reads a bundle.
type bundleFlags struct {
	verifyKey, verify, cache, dockerConfig *string
	fallback, plainHTTP                    *bool
	// source is where the catalog came from, once loaded from a bundle.
	source record.CatalogSource
}

// The help of the registry's flags, which push shares.
const (
	plainHTTPUsage    = "talk plain HTTP to the registry (always for localhost)"
	dockerConfigUsage = "Docker config file with registry credentials (default ~/.docker/config.json)"
)

func addBundleFlags(fs *pflag.FlagSet) *bundleFlags {
	cache := ""
	if d, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(d, "hopdag", "bundles")
	}
	return &bundleFlags{
		verifyKey:    fs.String("verify-key", "", "for a bundle REF: PEM certificate whose Notary Project signature the bundle must carry"),
		verify:       fs.String("verify", "", "required (the default with --verify-key) or optional (an unsigned bundle is accepted)"),
		cache:        fs.String("cache", cache, "for a bundle REF: local bundle cache (an OCI layout); empty for none"),
		fallback:     fs.Bool("cache-fallback", false, "use the cached bundle when the registry is unreachable"),
		plainHTTP:    fs.Bool("plain-http", false, plainHTTPUsage),
		dockerConfig: fs.String("docker-config", "", dockerConfigUsage),
	}
}

// checkDir returns why the flags cannot go with catalog, the command's
// catalog argument, or nil: --verify-key and --verify check a bundle's
// signature, and a catalog directory (or "-", the sample catalog) carries
// none, so they are refused rather than ignored. It reads no file.
func (f *bundleFlags) checkDir(catalog string) error {
	if bundle.IsReference(catalog) {
		return nil
	}
	var set []string
	if *f.verifyKey != "" {
		set = append(set, "--verify-key")
	}
	if *f.verify != "" {
		set = append(set, "--verify")
	}
	if len(set) == 0 {
		return nil
	}
	verb := "applies"
	if len(set) > 1 {
		verb = "apply"
	}
	what := catalog + " is a directory"
	if catalog == "-" {
		what = "- is the embedded sample catalog"
	}
	return fmt.Errorf("%s %s to oci:// and oci-layout:// references; %s, which carries no signature: leave %s out, or give the bundle reference",
		strings.Join(set, " and "), verb, what, strings.Join(set, " and "))
}

// client builds a bundle client from the flags.
func (f *bundleFlags) client(extra ...bundle.Option) (*bundle.Client, error) {
	var opts []bundle.Option
	if *f.verifyKey != "" {
		certs, err := bundle.ReadCertificates(*f.verifyKey)
		if err != nil {
			return nil, err
		}
		mode := bundle.VerifyRequired
		switch *f.verify {
		case "", "required":
		case "optional":
			mode = bundle.VerifyOptional
		default:
			return nil, fmt.Errorf("--verify must be required or optional, got %q", *f.verify)
		}
		opts = append(opts, bundle.WithVerifyKey(mode, certs...))
	} else if *f.verify != "" {
		return nil, errors.New("--verify needs --verify-key")
	}
	if *f.cache != "" {
		opts = append(opts, bundle.WithCache(*f.cache))
	}
	if *f.fallback {
		if *f.cache == "" {
			return nil, errors.New("--cache-fallback needs --cache")
		}
		opts = append(opts, bundle.WithCacheFallback())
	}
	if *f.plainHTTP {
		opts = append(opts, bundle.WithPlainHTTP())
	}
	if *f.dockerConfig != "" {
		opts = append(opts, bundle.WithDockerConfig(*f.dockerConfig))
	}
	return bundle.New(append(opts, extra...)...), nil
}

// catalog pulls the catalog of a bundle reference and records its source.
// main.go's catalog() has no context: an interrupt cancels the pull here,
// as main's context would.
func (f *bundleFlags) catalog(ref string, stderr io.Writer) (*release.Catalog, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := f.client()
	if err != nil {
		return nil, err
	}
	b, err := c.Pull(ctx, ref)
	if err != nil {
		return nil, err
	}
	if b.Cached {
		fmt.Fprintf(stderr, "hopdag: %s\n", b.Note)
	}
	f.source = b.Source()
	return b.Catalog, nil
}

// bundleCommand is one subcommand of hopdag bundle: its arguments, what
// it does and one example, as the other commands' -h shows them.
type bundleCommand struct {
	args, summary, example string
}

var bundleCommands = map[string]bundleCommand{
	"push": {"DIR REF", "validate the catalog directory DIR and push it to REF as a bundle, signed with --sign-key and --sign-cert; prints the digest",
		"hopdag bundle push testdata/catalog oci://localhost:5000/hopdag/catalog:v26.09 --sign-key release.key --sign-cert release.crt"},
	"pull": {"REF DIR", "pull the bundle REF (verified with --verify-key), validate it and write its catalog into DIR, new or empty",
		"hopdag bundle pull oci://localhost:5000/hopdag/catalog:v26.09 catalog --verify-key release.crt"},
	"export": {"REF FILE", "write the bundle REF and its signatures to an OCI layout FILE (FILE.tar: a tarball) for a site without the registry",
		"hopdag bundle export oci://localhost:5000/hopdag/catalog:v26.09 offline.tar --verify-key release.crt"},
	"copy": {"SRC DST", "copy the bundle SRC and its signatures to DST, another registry or layout",
		"hopdag bundle copy oci://registry.example/hopdag/catalog:v26.09 oci://bootstrap:5000/hopdag/catalog"},
	"keygen": {"NAME", "write NAME.key and NAME.crt, a self-signed signing key and its certificate (never replacing either)",
		"hopdag bundle keygen release"},
}

// bundleFlagSet defines the flags of bundle sub: push takes the signing
// key and the registry's flags, pull, export and copy those of reading a
// bundle (addBundleFlags), keygen none. The flags a subcommand does not
// take are nil in bf (keygen) or point at their zero value (push's
// --verify-key, --cache), so that bf.client works for each.
func bundleFlagSet(sub string) (fs *pflag.FlagSet, bf *bundleFlags, signKey, signCert *string) {
	fs = pflag.NewFlagSet("hopdag bundle "+sub, pflag.ContinueOnError)
	fs.SortFlags = false
	signKey, signCert = new(string), new(string)
	switch sub {
	case "push":
		signKey = fs.String("sign-key", "", "PEM private key to sign the bundle with (Notary Project signature)")
		signCert = fs.String("sign-cert", "", "PEM certificate (chain) of --sign-key")
		bf = &bundleFlags{verifyKey: new(string), verify: new(string), cache: new(string), fallback: new(bool),
			plainHTTP:    fs.Bool("plain-http", false, plainHTTPUsage),
			dockerConfig: fs.String("docker-config", "", dockerConfigUsage)}
	case "keygen":
	default:
		bf = addBundleFlags(fs)
	}
	return fs, bf, signKey, signCert
}

// newBundleCommand is hopdag bundle and its subcommands.
func newBundleCommand(e env, code *int) *cobra.Command {
	parent := &cobra.Command{
		Use:   "bundle",
		Short: "catalogs as OCI artifacts: push, pull, export, copy, keygen",
		Long:  "hopdag bundle: catalogs as OCI artifacts.\n\n" + bundleUsage,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(e.stderr)
			cmd.Help()
			*code = exitUsage
			return nil
		},
	}
	for _, sub := range []string{"push", "pull", "export", "copy", "keygen"} {
		bc := bundleCommands[sub]
		fs, bf, signKey, signCert := bundleFlagSet(sub)
		cmd := &cobra.Command{
			Use:     sub + " " + bc.args,
			Short:   bc.summary,
			Long:    "hopdag bundle " + sub + ": " + bc.summary,
			Example: "  " + bc.example,
			Args:    cobra.ArbitraryArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				*code = runBundle(cmd.Context(), sub, args, bf, signKey, signCert, e.stdout, e.stderr)
				return nil
			},
		}
		cmd.Flags().AddFlagSet(fs)
		cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveDefault
		}
		parent.AddCommand(cmd)
	}
	return parent
}

// runBundle runs `hopdag bundle SUB POS...` with the flags parsed.
func runBundle(ctx context.Context, sub string, pos []string, bf *bundleFlags, signKey, signCert *string, stdout, stderr io.Writer) int {
	bc := bundleCommands[sub]
	nargs := strings.Count(bc.args, " ") + 1
	fail := func(err error) int {
		// In the command line's terms, as every command's errors (message).
		fmt.Fprintf(stderr, "hopdag bundle %s: %s\n", sub, message(err))
		return exitInvalid
	}
	if len(pos) != nargs {
		fmt.Fprintf(stderr, "hopdag bundle %s: want %d arguments (%s), got %d\n%s", sub, nargs, bc.args, len(pos), usageHint("hopdag bundle "+sub))
		return exitUsage
	}
	var extra []bundle.Option
	if *signKey != "" || *signCert != "" {
		if *signKey == "" || *signCert == "" {
			fmt.Fprintf(stderr, "hopdag bundle %s: --sign-key and --sign-cert go together, with push\n%s", sub, usageHint("hopdag bundle "+sub))
			return exitUsage
		}
		key, certs, err := bundle.ReadKeyFiles(*signKey, *signCert)
		if err != nil {
			return fail(err)
		}
		extra = append(extra, bundle.WithSigningKey(key, certs))
	}
	if sub == "keygen" {
		return bundleKeygen(pos[0], stdout, fail)
	}
	c, err := bf.client(extra...)
	if err != nil {
		return fail(err)
	}
	switch sub {
	case "push":
		p, err := c.Push(ctx, pos[0], pos[1])
		if err != nil {
			return fail(err)
		}
		signed := ""
		if p.Signed {
			signed = ", signed"
		}
		fmt.Fprintf(stdout, "pushed %s: %s (%d %s%s)\n", p.Ref, p.Digest, len(p.Files), plural(len(p.Files), "file"), signed)
		if users := catalogValueUsers(pos[0]); len(users) > 0 {
			fmt.Fprintf(stderr, "hopdag bundle push: warning: %s read .Values.catalog (the catalog directory), and the bundle holds only the catalog's documents, manifest files and charts, not the files those components reach through it: "+
				"a run from the bundle needs them on its machine, given with --set catalog=DIR\n", andList(users))
		}
	case "pull":
		if err := checkPullDir(pos[1]); err != nil {
			return fail(err)
		}
		b, err := c.Pull(ctx, pos[0])
		if err != nil {
			return fail(err)
		}
		if err := writeDir(pos[1], b.Files); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "pulled %s: %s into %s (%d %s%s)\n", b.Ref, b.Digest, pos[1], len(b.Catalog.Releases), plural(len(b.Catalog.Releases), "release"), bundleNote(b))
	case "export", "copy":
		run, done := c.Export, "exported"
		if sub == "copy" {
			run, done = c.Copy, "copied"
		}
		b, err := run(ctx, pos[0], pos[1])
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "%s %s: %s to %s%s\n", done, b.Ref, b.Digest, pos[1], bundleNote(b))
	}
	return exitOK
}

// catalogValue is a template reading .Values.catalog.
var catalogValue = regexp.MustCompile(`\.Values\.catalog\b`)

// catalogValueUsers names the component versions ("NAME VERSION", by name
// then version) of the catalog directory dir whose templates (command,
// rollback, phases, manifests, Helm values: anything in the document)
// read .Values.catalog; nil when none does or dir does not load (Push
// has loaded it already).
func catalogValueUsers(dir string) []string {
	cat, err := release.LoadDir(dir)
	if err != nil {
		return nil
	}
	cvs := slices.Clone(cat.Components)
	slices.SortFunc(cvs, func(a, b release.ComponentVersion) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), a.Version.Compare(b.Version))
	})
	var users []string
	for _, cv := range cvs {
		if data, err := json.Marshal(cv); err == nil && catalogValue.Match(data) {
			users = append(users, cv.Name+" "+cv.Version.Original())
		}
	}
	return users
}

// checkPullDir returns why bundle pull cannot write into dir, or nil: dir
// must be new or an empty directory, so that the pulled catalog is not
// mixed with another.
func checkPullDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory; give a new or empty directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not empty (it holds %s); give a new or empty directory, so that the pulled catalog is not mixed with what is there", dir, entries[0].Name())
	}
	return nil
}

// writeDir writes files into dir, which checkPullDir accepted: into a
// temporary directory beside it first, renamed to dir once complete, so
// that a failure halfway leaves no partial catalog.
func writeDir(dir string, files fs.FS) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".pull-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.CopyFS(tmp, files); err != nil {
		return fmt.Errorf("writing %s: %w", dir, err)
	}
	// An empty dir is replaced; rename(2) would do that too, but not on
	// every system. Remove fails, as it should, if dir filled up meanwhile.
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w; give a new or empty directory", err)
	}
	return os.Rename(tmp, dir)
}

func bundleNote(b *bundle.Bundle) string {
	s := ""
	if b.Verified {
		s += ", signature verified"
	}
	if b.Cached {
		s += "; " + b.Note
	}
	return s
}

// bundleKeygen writes NAME.key and NAME.crt, refusing to replace either:
// the signatures made with an earlier key would no longer verify. Both
// files are created with O_EXCL before either is written, and when the
// second cannot be created the first is removed, so that a refusal leaves
// the directory as it was.
func bundleKeygen(name string, stdout io.Writer, fail func(error) int) int {
	key, cert, err := bundle.GenerateKey(filepath.Base(name), 365*24*time.Hour)
	if err != nil {
		return fail(err)
	}
	files := []struct {
		path string
		data []byte
		perm os.FileMode
	}{{name + ".key", key, 0o600}, {name + ".crt", cert, 0o644}}
	var created []*os.File
	undo := func() {
		for _, f := range created {
			f.Close()
			os.Remove(f.Name())
		}
	}
	for _, file := range files {
		f, err := os.OpenFile(file.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, file.perm)
		if err != nil {
			undo()
			if errors.Is(err, fs.ErrExist) {
				return fail(fmt.Errorf("%s exists: keygen does not replace a key or certificate (signatures made with it would no longer verify); give another NAME, or remove %s.key and %s.crt first", file.path, name, name))
			}
			return fail(err)
		}
		created = append(created, f)
	}
	for i, f := range created {
		if _, err := f.Write(files[i].data); err != nil {
			undo()
			return fail(err)
		}
	}
	for _, f := range created {
		if err := f.Close(); err != nil {
			undo()
			return fail(err)
		}
	}
	fmt.Fprintf(stdout, "wrote %s.key (keep it secret) and %s.crt (give it to --verify-key)\n", name, name)
	return exitOK
}
