package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pushLayout pushes the test catalog to an OCI layout under dir and
// returns its reference; no registry is needed.
func pushLayout(t *testing.T, dir string) string {
	t.Helper()
	ref := "oci-layout://" + filepath.Join(dir, "layout") + ":v26.09"
	code, _, errOut := invoke("bundle", "push", catalog, ref)
	require.Equal(t, exitOK, code, "push: %s", errOut)
	return ref
}

// export and copy say what they did in English: "exported", "copied".
func TestBundleCopyExportWords(t *testing.T) {
	dir := t.TempDir()
	ref := pushLayout(t, dir)
	for _, tc := range []struct{ sub, dst, want string }{
		{"export", filepath.Join(dir, "offline.tar"), "exported " + ref},
		{"copy", "oci-layout://" + filepath.Join(dir, "copy") + ":v26.09", "copied " + ref},
	} {
		t.Run(tc.sub, func(t *testing.T) {
			code, out, errOut := invoke("bundle", tc.sub, ref, tc.dst, "--cache=")
			require.Equal(t, exitOK, code, "%s: %s", tc.sub, errOut)
			assert.Contains(t, out, tc.want, "bundle %s output", tc.sub)
		})
	}
}

// keygen never overwrites a key or a certificate: the signatures made
// with them would no longer verify. It refuses, naming the file, and
// writes neither.
func TestBundleKeygenRefusesExisting(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing []string // of NAME.key, NAME.crt
		want     string   // the file named
	}{
		{"both exist", []string{".key", ".crt"}, ".key"},
		{"the key exists", []string{".key"}, ".key"},
		{"the certificate exists", []string{".crt"}, ".crt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "release")
			for _, ext := range tc.existing {
				require.NoError(t, os.WriteFile(name+ext, []byte("earlier "+ext), 0o600))
			}
			code, out, errOut := invoke("bundle", "keygen", name)
			assert.Equal(t, exitInvalid, code, "keygen over %v; stdout %q", tc.existing, out)
			assert.Contains(t, errOut, name+tc.want, "the message names the file")
			assert.Contains(t, errOut, "exists")
			for _, ext := range []string{".key", ".crt"} {
				data, err := os.ReadFile(name + ext)
				if slices.Contains(tc.existing, ext) {
					require.NoError(t, err)
					assert.Equal(t, "earlier "+ext, string(data), "%s is left as it was", ext)
				} else {
					assert.ErrorIs(t, err, fs.ErrNotExist, "%s is not written", ext)
				}
			}
		})
	}
}

// bundle pull writes into a new or empty directory only: into one that
// holds anything it refuses before writing, naming the directory, and
// leaves what was there as it was (it used to fail halfway with "file
// exists" and leave a mix of both catalogs). It writes beside DIR and
// renames, so that nothing else is left there.
func TestBundlePullDestination(t *testing.T) {
	ref := pushLayout(t, t.TempDir())
	for _, tc := range []struct {
		name    string
		dst     string // under a new temporary directory
		prepare func(t *testing.T, dst string)
		wantErr string // "" when the pull succeeds
	}{
		{"new directory", "pulled", func(*testing.T, string) {}, ""},
		{"new directory under a new parent", "a/b/pulled", func(*testing.T, string) {}, ""},
		{"empty directory", "pulled", func(t *testing.T, dst string) { require.NoError(t, os.Mkdir(dst, 0o755)) }, ""},
		{"directory with a file", "pulled", func(t *testing.T, dst string) {
			require.NoError(t, os.Mkdir(dst, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dst, "releases.yaml"), []byte("# mine\n"), 0o644))
		}, "is not empty"},
		{"a file", "pulled", func(t *testing.T, dst string) {
			require.NoError(t, os.WriteFile(dst, []byte("# mine\n"), 0o644))
		}, "is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dst := filepath.Join(root, tc.dst)
			tc.prepare(t, dst)
			before := listTree(t, root)
			code, out, errOut := invoke("bundle", "pull", ref, dst, "--cache=")
			if tc.wantErr == "" {
				require.Equal(t, exitOK, code, "pull: %s", errOut)
				assert.Contains(t, out, "into "+dst)
				code, _, errOut = invoke("validate", dst)
				assert.Equal(t, exitOK, code, "the pulled directory is a valid catalog: %s", errOut)
				beside, err := os.ReadDir(filepath.Dir(dst))
				require.NoError(t, err)
				require.Len(t, beside, 1, "nothing but DIR is left beside it: %v", beside)
				assert.Equal(t, "pulled", beside[0].Name())
				return
			}
			assert.Equal(t, exitInvalid, code, "pull into %s; stdout %q", tc.name, out)
			assert.Contains(t, errOut, dst+" "+tc.wantErr, "the message names DIR")
			assert.Contains(t, errOut, "give a new or empty directory", "the message says how to fix it")
			assert.Equal(t, before, listTree(t, root), "nothing is written")
		})
	}
}

// listTree lists the paths under root, sorted (fs.WalkDir's order).
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, fs.WalkDir(os.DirFS(root), ".", func(p string, _ fs.DirEntry, err error) error {
		if p != "." {
			out = append(out, p)
		}
		return err
	}))
	return out
}

// The audit's repro: a run from oci-layout://lay@D1 stopped by --until
// does not resume from lay@D2, nor from the catalog directory, and the
// status still names D1; it resumes from the same digest under its tag,
// and the status then names the reference in use.
func TestBundleResumeChecksDigest(t *testing.T) {
	dir := t.TempDir()
	layout := "oci-layout://" + filepath.Join(dir, "lay")
	code, out, errOut := invoke("bundle", "push", catalog, layout+":v1")
	require.Equal(t, exitOK, code, "push: %s", errOut)
	d1 := digestRE.FindString(out)
	other := filepath.Join(dir, "other")
	require.NoError(t, os.CopyFS(other, os.DirFS(catalog)))
	f, err := os.OpenFile(filepath.Join(other, "releases.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("\n# another build\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	code, out, errOut = invoke("bundle", "push", other, layout+":v2")
	require.Equal(t, exitOK, code, "push: %s", errOut)
	d2 := digestRE.FindString(out)
	require.NotEqual(t, d1, d2)

	state := filepath.Join(dir, "state")
	runFrom := func(cat string, extra ...string) (int, string, string) {
		return invoke(append([]string{"run", cat, "--from", "v26.06-rc.2", "--to", "v26.09", "--simulate", "--speed", "20000", "--state", state, "--cache="}, extra...)...)
	}
	code, _, errOut = runFrom(layout+"@"+d1, "--until", "v26.06-rc.3")
	require.Equal(t, exitOK, code, "first run, until v26.06-rc.3: %s", errOut)

	for _, tc := range []struct{ name, cat, want string }{
		{"another digest", layout + "@" + d2, "catalog " + layout + "@" + d2 + " (" + d2 + ") is not the bundle this run started from, " + layout + "@" + d1 + " (" + d1 + ")"},
		{"the directory", catalog, "the plan's catalog is a directory, which has no digest to compare"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runFrom(tc.cat)
			assert.Equal(t, exitInvalid, code, "resume from %s; stderr: %s", tc.cat, errOut)
			assert.Contains(t, errOut, tc.want)
			assert.Contains(t, errOut, "resume with the bundle pinned by digest ("+layout+"@"+d1+")")
			assert.NotContains(t, errOut, "the route also depends on", "the bundle is what differs, not the route's flags")
			code, out, errOut := invoke("status", "--state", state, "-o", "yaml")
			require.Equal(t, exitRunning, code, "status of the paused run: %s", errOut)
			assert.Contains(t, out, "digest: "+d1, "the status still names the first bundle")
			assert.NotContains(t, out, d2)
		})
	}

	code, _, errOut = runFrom(layout + ":v1")
	require.Equal(t, exitOK, code, "resume from the same digest under its tag: %s", errOut)
	code, out, errOut = invoke("status", "--state", state, "-o", "yaml")
	require.Equal(t, exitOK, code, "status of the finished run: %s", errOut)
	assert.Contains(t, out, "ref: "+layout+":v1", "the status names the reference in use")
	assert.Contains(t, out, "digest: "+d1)
}

// --verify-key and --verify apply to bundle references only: with a
// catalog directory (or "-", the sample catalog) checkDir refuses them,
// saying why, instead of ignoring them, before the key file is read.
func TestBundleVerifyFlagsCheckDir(t *testing.T) {
	for _, tc := range []struct {
		name    string
		catalog string
		flags   []string
		want    string // "" for no error
	}{
		{"a directory with --verify-key", "testdata/catalog", []string{"--verify-key", "nonexist.crt"},
			"--verify-key applies to oci:// and oci-layout:// references; testdata/catalog is a directory, which carries no signature"},
		{"a directory with --verify", "testdata/catalog", []string{"--verify", "optional"},
			"--verify applies to oci:// and oci-layout:// references; testdata/catalog is a directory, which carries no signature"},
		{"a directory with both", "testdata/catalog", []string{"--verify-key", "k.crt", "--verify", "required"},
			"--verify-key and --verify apply to oci:// and oci-layout:// references; testdata/catalog is a directory"},
		{"the sample catalog", "-", []string{"--verify-key", "k.crt"},
			"--verify-key applies to oci:// and oci-layout:// references; - is the embedded sample catalog, which carries no signature"},
		{"a directory", "testdata/catalog", nil, ""},
		{"a directory with an empty --verify-key", "testdata/catalog", []string{"--verify-key="}, ""},
		{"a registry", "oci://localhost:5000/hopdag/catalog:v1", []string{"--verify-key", "k.crt"}, ""},
		{"a layout", "oci-layout://lay:v1", []string{"--verify-key", "k.crt", "--verify", "optional"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			bf := addBundleFlags(fs)
			require.NoError(t, fs.Parse(tc.flags))
			err := bf.checkDir(tc.catalog)
			if tc.want == "" {
				assert.NoError(t, err, "checkDir(%q) with %v", tc.catalog, tc.flags)
				return
			}
			require.Error(t, err, "checkDir(%q) with %v", tc.catalog, tc.flags)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
