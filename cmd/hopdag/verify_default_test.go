package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --verify-key alone requires a signature: an unsigned bundle, in an OCI
// layout directory or in a tarball exported from it, is refused by plan,
// which says that no signature is attached, names the reference and the
// flag that accepts it, and prints no plan. --verify optional accepts it;
// it still refuses a bundle signed with another key than the one given.
// Every other command that reads a bundle does the same. No registry is
// needed.
func TestVerifyKeyRequiredByDefault(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "release")
	code, _, errOut := invoke("bundle", "keygen", key)
	require.Equal(t, exitOK, code, "keygen: %s", errOut)
	other := filepath.Join(dir, "other")
	code, _, errOut = invoke("bundle", "keygen", other)
	require.Equal(t, exitOK, code, "keygen: %s", errOut)

	unsigned := pushLayout(t, dir) // oci-layout://DIR/layout:v26.09, no signature
	tarball := filepath.Join(dir, "offline.tar")
	code, _, errOut = invoke("bundle", "export", unsigned, tarball, "--cache=")
	require.Equal(t, exitOK, code, "export: %s", errOut)
	signed := "oci-layout://" + filepath.Join(dir, "signed") + ":v26.09"
	code, _, errOut = invoke("bundle", "push", catalog, signed, "--sign-key", other+".key", "--sign-cert", other+".crt")
	require.Equal(t, exitOK, code, "push signed with the other key: %s", errOut)

	plan := func(ref string, verify ...string) (int, string, string) {
		args := append([]string{"plan", ref, "--from", "v26.06-rc.2", "--to", "v26.09", "--cache="}, verify...)
		return invoke(args...)
	}
	for _, tc := range []struct {
		name   string
		ref    string
		verify []string
		// want is in stderr when the plan is refused, "" when it is printed.
		want string
	}{
		{"layout, key only", unsigned, []string{"--verify-key", key + ".crt"}, "no signature is attached to the bundle"},
		{"layout, required", unsigned, []string{"--verify-key", key + ".crt", "--verify", "required"}, "no signature is attached to the bundle"},
		{"layout, optional", unsigned, []string{"--verify-key", key + ".crt", "--verify", "optional"}, ""},
		{"tarball, key only", "oci-layout://" + tarball + ":v26.09", []string{"--verify-key", key + ".crt"}, "no signature is attached to the bundle"},
		{"tarball, optional", "oci-layout://" + tarball + ":v26.09", []string{"--verify-key", key + ".crt", "--verify", "optional"}, ""},
		{"signed by another key, optional", signed, []string{"--verify-key", key + ".crt", "--verify", "optional"}, "signature verification failed"},
		{"no key", unsigned, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := plan(tc.ref, tc.verify...)
			what := "hopdag plan " + tc.ref + " " + strings.Join(tc.verify, " ")
			if tc.want == "" {
				require.Equal(t, exitOK, code, "%s: stderr:\n%s", what, errOut)
				assert.Contains(t, out, "catalog: "+tc.ref+" (sha256:", "%s prints the plan of the bundle", what)
				return
			}
			assert.Equal(t, exitInvalid, code, "%s exit code; stdout:\n%s", what, out)
			assert.Empty(t, out, "%s prints no plan", what)
			assert.Contains(t, errOut, tc.want, what)
			assert.Contains(t, errOut, tc.ref, "%s names the reference", what)
			if strings.Contains(tc.want, "no signature") {
				assert.Contains(t, errOut, "--verify optional", "%s says which flag accepts an unsigned bundle", what)
				assert.NotContains(t, errOut, "VerifyOptional", "%s names the flag, not the Go option", what)
			}
		})
	}

	// The other readers of a bundle: each refuses the unsigned bundle
	// with --verify-key alone in the same words (bundle pull and export
	// used to print the library's Go option, VerifyOptional), and
	// accepts it with --verify optional.
	for _, tc := range []struct {
		name string
		args func(dst string) []string
	}{
		{"validate", func(string) []string { return []string{"validate", unsigned} }},
		{"run", func(dst string) []string {
			return []string{"run", unsigned, "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--simulate", "--speed", "100000", "--state", dst}
		}},
		{"bundle pull", func(dst string) []string { return []string{"bundle", "pull", unsigned, dst} }},
		{"bundle export", func(dst string) []string { return []string{"bundle", "export", unsigned, dst + ".tar"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.args(filepath.Join(t.TempDir(), "dst")), "--cache=", "--verify-key", key+".crt")
			code, out, errOut := invoke(args...)
			what := "hopdag " + strings.Join(args, " ")
			assert.Equal(t, exitInvalid, code, "%s exit code; stdout:\n%s", what, out)
			assert.Contains(t, errOut, "no signature is attached to the bundle", what)
			assert.Contains(t, errOut, unsigned, "%s names the reference", what)
			assert.Contains(t, errOut, "accept unsigned bundles (--verify optional)", "%s says which flag accepts an unsigned bundle", what)
			assert.NotContains(t, errOut, "VerifyOptional", "%s names the flag, not the Go option", what)

			args = append(tc.args(filepath.Join(t.TempDir(), "dst")), "--cache=", "--verify-key", key+".crt", "--verify", "optional")
			code, _, errOut = invoke(args...)
			assert.Equal(t, exitOK, code, "hopdag %s accepts the unsigned bundle; stderr:\n%s", strings.Join(args, " "), errOut)
		})
	}
}
