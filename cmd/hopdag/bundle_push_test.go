package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/bundle/bundletest"
)

// bundle push of another catalog with a signing key that is not its
// certificate's is refused
// before anything is pushed, naming both files, and the tag still names
// the signed bundle, which verifies.
func TestBundlePushMismatchedKey(t *testing.T) {
	r := bundletest.Start(t)
	dir := t.TempDir()
	release, other := filepath.Join(dir, "release"), filepath.Join(dir, "other")
	for _, k := range []string{release, other} {
		code, _, errOut := invoke("bundle", "keygen", k)
		require.Equal(t, exitOK, code, "keygen: %s", errOut)
	}
	ref := r.Ref("hopdag/prod:v26.09")
	code, out, errOut := invoke("bundle", "push", catalog, ref, "--sign-key", release+".key", "--sign-cert", release+".crt")
	require.Equal(t, exitOK, code, "push: %s", errOut)
	digest := digestRE.FindString(out)

	changed := t.TempDir()
	require.NoError(t, os.CopyFS(changed, os.DirFS(catalog)))
	f, err := os.OpenFile(filepath.Join(changed, "releases.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("\n# another build\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	code, _, errOut = invoke("bundle", "push", changed, ref, "--sign-key", other+".key", "--sign-cert", release+".crt")
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, errOut, "the signing key "+other+".key and the certificate "+release+".crt do not belong together")

	code, out, errOut = invoke("bundle", "pull", ref, filepath.Join(dir, "pulled"), "--verify-key", release+".crt", "--cache=")
	require.Equal(t, exitOK, code, "pull: %s", errOut)
	assert.Contains(t, out, digest, "the tag did not move")
	assert.Contains(t, out, "signature verified")
}

// bundle push and bundle copy to oci-layout://X.tar write a tarball, as
// export does, and add to an existing one.
func TestBundleLayoutTarball(t *testing.T) {
	dir := t.TempDir()
	tarball := filepath.Join(dir, "lay.tar")
	code, _, errOut := invoke("bundle", "push", catalog, "oci-layout://"+tarball+":v1")
	require.Equal(t, exitOK, code, "push: %s", errOut)
	code, _, errOut = invoke("bundle", "copy", "oci-layout://"+tarball+":v1", "oci-layout://"+tarball+":v2", "--cache=")
	require.Equal(t, exitOK, code, "copy: %s", errOut)
	fi, err := os.Stat(tarball)
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "%s is a file, not a %v", tarball, fi.Mode().Type())
	for _, tag := range []string{"v1", "v2"} {
		code, _, errOut = invoke("validate", "oci-layout://"+tarball+":"+tag, "--cache=")
		assert.Equal(t, exitOK, code, "validate %s:%s: %s", tarball, tag, errOut)
	}
}
