package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseEtcdURL(t *testing.T) {
	tests := []struct {
		spec      string
		endpoints []string
		prefix    string
		err       string
	}{
		{"etcd://127.0.0.1:2379/hopdag/prod", []string{"127.0.0.1:2379"}, "/hopdag/prod/", ""},
		{"etcd://a:1,b:2/run/", []string{"a:1", "b:2"}, "/run/", ""},
		{"etcd://127.0.0.1:2379", nil, "", "want etcd://host:port/prefix"},
		{"etcd://127.0.0.1:2379/", nil, "", "want etcd://host:port/prefix"},
		{"etcd:///prefix", nil, "", "want etcd://host:port/prefix"},
		{"etcd://a:1,,b:2/p", nil, "", "an empty endpoint"},
		{"etcd://a:1/p?x=1", nil, "", "want etcd://host:port/prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			eps, prefix, err := parseEtcdURL(tt.spec)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.endpoints, eps)
			assert.Equal(t, tt.prefix, prefix)
		})
	}
}

// Whatever parseEtcdURL accepts has endpoints and a prefix that ends the
// run's keys with "/".
func FuzzParseEtcdURL(f *testing.F) {
	for _, s := range []string{"etcd://127.0.0.1:2379/hopdag/prod", "etcd://a:1,b:2/x", "etcd://x", "etcd://%zz/p"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		eps, prefix, err := parseEtcdURL(spec)
		if err != nil {
			return
		}
		if len(eps) == 0 || !strings.HasPrefix(prefix, "/") || !strings.HasSuffix(prefix, "/") || len(prefix) < 3 {
			t.Fatalf("parseEtcdURL(%q) = %q, %q", spec, eps, prefix)
		}
		for _, e := range eps {
			if e == "" {
				t.Fatalf("parseEtcdURL(%q): empty endpoint in %q", spec, eps)
			}
		}
	})
}

// A program that is not in PATH fails for good, without retries.
func TestRunMissingProgram(t *testing.T) {
	dir := t.TempDir()
	cat := strings.ReplaceAll(mustRead(t, filepath.Join(execCatalog, "components.yaml")), "args: [sh,", "args: [no-such-program-hopdag,")
	cat = strings.ReplaceAll(cat, "  timeout: 1m\n", "  timeout: 1m\n  retries: {attempts: 3, backoff: 1ms}\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "components.yaml"), []byte(cat), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "releases.yaml"), []byte(mustRead(t, filepath.Join(execCatalog, "releases.yaml"))), 0o644))
	code, out, _ := invoke("run", dir, "--from", "v1.0", "--to", "v1.1", "--set", "out="+t.TempDir())
	assert.Equal(t, 1, code)
	assert.Regexp(t, `config +1\.0 +1\.1 +Failed +1 `, out, "one attempt: the failure is permanent")
	assert.Contains(t, out, `exec: "no-such-program-hopdag": executable file not found in $PATH`)
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// A --state that looks like a mistyped URL is refused, naming the form
// wanted, instead of becoming a directory of that name; a directory whose
// name has a colon is given with ./ first.
func TestStateMistypedURL(t *testing.T) {
	cat := absPath(t, execCatalog)
	for _, tt := range []struct {
		spec, want string
	}{
		{"etcd:/127.0.0.1:33791/x", "--state etcd:/127.0.0.1:33791/x: want etcd://host:port/prefix"},
		{"etcd:127.0.0.1:2379/x", "--state etcd:127.0.0.1:2379/x: want etcd://host:port/prefix"},
		{"KUBE:/ns/name", "--state KUBE:/ns/name: want kube://namespace/name"},
		{"kube:ns/name", "--state kube:ns/name: want kube://namespace/name"},
		{"s3:/bucket/x", `--state s3:/bucket/x: a URL needs "//" after its scheme; want a directory, etcd://host:port/prefix or kube://namespace/name`},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			for _, args := range [][]string{
				{"run", cat, "--from", "v1.0", "--to", "v1.1", "--simulate", "--state", tt.spec},
				{"status", "--state", tt.spec},
			} {
				code, _, stderr := invoke(args...)
				assert.Equal(t, exitInvalid, code, "hopdag %s; stderr:\n%s", strings.Join(args, " "), stderr)
				assert.Contains(t, stderr, tt.want)
				assert.Contains(t, stderr, "./"+tt.spec, "says how to name a directory of that name")
			}
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries, "--state %s created something", tt.spec)
		})
	}
	// A name with a colon that looks like no URL, and the same with ./,
	// are directories.
	for _, spec := range []string{"state:2", "./etcd:/x"} {
		dir := t.TempDir()
		t.Chdir(dir)
		code, _, stderr := invoke("run", cat, "--from", "v1.0", "--to", "v1.1", "--simulate", "--speed", "20000", "--state", spec)
		assert.Equal(t, exitOK, code, "--state %s; stderr:\n%s", spec, stderr)
		assert.DirExists(t, filepath.Join(dir, spec))
	}
}
