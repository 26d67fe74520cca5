package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/bundle/bundletest"
	"github.com/hopdag/hopdag/state"
)

var digestRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// The CLI round trip through a real registry: keygen, push signed, plan
// and run from oci://REF with --verify-key (the plan names the digest),
// pull into a directory, export to a tarball, then plan and run from the
// tarball with the registry stopped.
func TestBundleCLI(t *testing.T) {
	r := bundletest.Start(t)
	dir := t.TempDir()
	key := filepath.Join(dir, "release")
	cache := "--cache=" + filepath.Join(dir, "cache")
	code, out, errOut := invoke("bundle", "keygen", key)
	require.Equal(t, exitOK, code, "keygen: %s", errOut)
	assert.Contains(t, out, "release.crt")

	ref := r.Ref("hopdag/catalog:v26.09")
	code, out, errOut = invoke("bundle", "push", catalog, ref, "--sign-key", key+".key", "--sign-cert", key+".crt")
	require.Equal(t, exitOK, code, "push: %s", errOut)
	digest := digestRE.FindString(out)
	require.NotEmpty(t, digest, "push prints the digest: %q", out)
	assert.Contains(t, out, "signed")

	_, want, _ := invoke("plan", catalog, "--from", "v26.06-rc.2", "--to", "v26.09")
	code, out, errOut = invoke("plan", ref, "--from", "v26.06-rc.2", "--to", "v26.09", "--verify-key", key+".crt", cache)
	require.Equal(t, exitOK, code, "plan from the bundle: %s", errOut)
	assert.Contains(t, out, "catalog: "+ref+" ("+digest+")\n", "the plan names the digest")
	// The inline note, the plan's line, the catalog's, then the hops.
	lines := strings.SplitN(out, "\n", 4)
	wantLines := strings.SplitN(want, "\n", 3)
	assert.Equal(t, wantLines[:2], lines[:2])
	assert.Equal(t, wantLines[2], lines[3], "the rest of the plan is the directory's")

	other := filepath.Join(dir, "other")
	invoke("bundle", "keygen", other)
	code, _, errOut = invoke("validate", ref, "--verify-key", other+".crt", cache)
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, errOut, "signature verification failed", "a wrong key is refused")

	pulled := filepath.Join(dir, "pulled")
	code, out, errOut = invoke("bundle", "pull", ref, pulled, "--verify-key", key+".crt", cache)
	require.Equal(t, exitOK, code, "pull: %s", errOut)
	assert.Contains(t, out, "signature verified")
	code, _, errOut = invoke("validate", pulled)
	assert.Equal(t, exitOK, code, "the pulled directory is a valid catalog: %s", errOut)

	tarball := filepath.Join(dir, "offline.tar")
	code, out, errOut = invoke("bundle", "export", ref, tarball, "--verify-key", key+".crt", cache)
	require.Equal(t, exitOK, code, "export: %s", errOut)
	assert.Contains(t, out, digest)

	r.Stop()
	layout := "oci-layout://" + tarball + ":v26.09"
	code, out, errOut = invoke("run", layout, "--from", "v26.06-rc.2", "--to", "v26.09", "--simulate", "--speed", "100000", "--verify-key", key+".crt", "--cache=", "--state", filepath.Join(dir, "state"))
	require.Equal(t, exitOK, code, "run from the exported tarball with no registry: %s", errOut)
	assert.Contains(t, out, "catalog: "+layout+" ("+digest+")")
	store, err := state.OpenFile(filepath.Join(dir, "state"))
	require.NoError(t, err)
	st, err := store.Load(context.Background())
	require.NoError(t, err)
	require.NoError(t, store.Close())
	assert.Equal(t, digest, st.Catalog.Digest, "the saved status names the digest")
	assert.Equal(t, layout, st.Catalog.Ref)

	code, _, errOut = invoke("plan", ref, "--from", "v26.06-rc.2", "--to", "v26.09", cache)
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, errOut, "registry unreachable")
	code, out, errOut = invoke("plan", ref, "--from", "v26.06-rc.2", "--to", "v26.09", cache, "--cache-fallback")
	require.Equal(t, exitOK, code, "plan with the cache fallback: %s", errOut)
	assert.Contains(t, errOut, "using the cached bundle")
	assert.Contains(t, out, digest)
}

func TestBundleUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bundle"}, exitUsage, "hopdag bundle push"},
		{[]string{"bundle", "nope"}, exitUsage, `unknown command "nope"`},
		{[]string{"bundle", "push", catalog}, exitUsage, "want 2 arguments (DIR REF), got 1"},
		{[]string{"bundle", "push", catalog, "oci://x/y:z", "--sign-key", "k"}, exitUsage, "--sign-key and --sign-cert go together"},
		{[]string{"bundle", "pull", "oci://x/y:z", "d", "--sign-key", "k"}, exitUsage, "hopdag bundle pull: unknown flag: --sign-key"},
		{[]string{"bundle", "push", catalog, "oci://x/y:z", "--verify-key", "k"}, exitUsage, "hopdag bundle push: unknown flag: --verify-key"},
		{[]string{"plan", "oci://x/y", "--from", "a", "--to", "b"}, exitInvalid, "no tag or digest"},
		{[]string{"validate", "oci-layout://" + t.TempDir() + "/missing:v1", "--cache="}, exitInvalid, "no such file"},
		{[]string{"validate", "oci-layout://x:v1", "--verify", "optional", "--cache="}, exitInvalid, "--verify needs --verify-key"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errOut := invoke(tc.args...)
			assert.Equal(t, tc.code, code, "exit code; stderr: %s", errOut)
			assert.Contains(t, errOut, tc.want)
		})
	}
}

// Each bundle subcommand's -h has the shape of the other commands': what
// it does, one example, and its own flags only.
func TestBundleHelp(t *testing.T) {
	for _, tt := range []struct {
		sub      string
		flags    []string
		notFlags []string
	}{
		{"push", []string{"sign-key", "sign-cert", "plain-http", "docker-config"}, []string{"verify-key", "verify", "cache", "cache-fallback"}},
		{"pull", []string{"verify-key", "verify", "cache", "cache-fallback", "plain-http", "docker-config"}, []string{"sign-key", "sign-cert"}},
		{"export", []string{"verify-key", "cache"}, []string{"sign-key"}},
		{"copy", []string{"verify-key", "cache"}, []string{"sign-key"}},
		{"keygen", nil, []string{"sign-key", "verify-key", "cache"}},
	} {
		t.Run(tt.sub, func(t *testing.T) {
			code, help, errOut := invoke("bundle", tt.sub, "-h")
			assert.Equal(t, exitOK, code)
			assert.Empty(t, errOut, "help goes to stdout")
			bc := bundleCommands[tt.sub]
			assert.True(t, strings.HasPrefix(help, "hopdag bundle "+tt.sub+": "+bc.summary+"\n\nUsage:\n  hopdag bundle "+tt.sub+" "+bc.args+" [flags]\n\nExamples:\n  "+bc.example+"\n"), "hopdag bundle %s -h:\n%s", tt.sub, help)
			for _, f := range tt.flags {
				assert.Regexp(t, `(?m)^\s+--`+f+`( |$)`, help, "hopdag bundle %s -h lists --%s", tt.sub, f)
			}
			for _, f := range tt.notFlags {
				assert.NotRegexp(t, `(?m)^\s+--`+f+`( |$)`, help, "hopdag bundle %s -h does not list --%s", tt.sub, f)
			}
		})
	}
}

// push and pull count files and releases in words that agree with the
// number ("1 file", "1 release"), offline through an OCI layout.
func TestBundleCounts(t *testing.T) {
	doc := func(kind, name, spec string) string {
		return fmt.Sprintf("---\napiVersion: hopdag.io/v1alpha1\nkind: %s\nmetadata: {name: %s}\nspec:\n%s", kind, name, spec)
	}
	component := doc("ComponentVersion", "a-v1.0", "  name: a\n  version: v1.0\n  handler: a\n")
	rel := func(v string) string {
		return doc("Release", "r-"+v, "  version: "+v+"\n  components: [{name: a, version: v1.0}]\n")
	}
	for _, tc := range []struct {
		name   string
		files  map[string]string
		pushed string
		pulled string
	}{
		{"one of each", map[string]string{"catalog.yaml": component + rel("v1.0")}, "(1 file)", "(1 release)"},
		{"two of each", map[string]string{"catalog.yaml": component + rel("v1.0"), "more.yaml": rel("v1.1")}, "(2 files)", "(2 releases)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src")
			require.NoError(t, os.Mkdir(src, 0o755))
			for name, data := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(src, name), []byte(data), 0o644))
			}
			ref := "oci-layout://" + filepath.Join(dir, "layout") + ":v1"
			code, out, errOut := invoke("bundle", "push", src, ref)
			require.Equal(t, exitOK, code, "push: %s", errOut)
			assert.Contains(t, out, tc.pushed, "push output")
			code, out, errOut = invoke("bundle", "pull", ref, filepath.Join(dir, "pulled"), "--cache=")
			require.Equal(t, exitOK, code, "pull: %s", errOut)
			assert.Contains(t, out, tc.pulled, "pull output")
		})
	}
}
