package bundle_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/bundle"
)

// oci-layout://X.tar as what Push, Copy and Export write is a tarball
// (not a directory named X.tar), new or existing: a second write adds its
// tag to what the tarball holds, the first tag still loads. Each load is a
// fresh client from the tarball alone, the signature included.
func TestWriteLayoutTarball(t *testing.T) {
	ctx := context.Background()
	key := newKey(t, "release team")
	signing := client(t, bundle.WithSigningKey(key.key, key.certs))
	src := "oci-layout://" + filepath.Join(t.TempDir(), "src")
	first, err := signing.Push(ctx, catalogDir, src+":v1")
	require.NoError(t, err)
	changed := copyDir(t, catalogDir)
	appendComment(t, filepath.Join(changed, "releases.yaml"), "v2")
	second, err := signing.Push(ctx, changed, src+":v2")
	require.NoError(t, err)
	require.NotEqual(t, first.Digest, second.Digest)

	// write writes the bundle of tag (v1 or v2) to the tarball as tag.
	type write func(t *testing.T, tarball, tag string)
	c := client(t)
	tests := []struct {
		name  string
		write write
	}{
		{"push", func(t *testing.T, tarball, tag string) {
			dir := catalogDir
			if tag == "v2" {
				dir = changed
			}
			_, err := signing.Push(ctx, dir, "oci-layout://"+tarball+":"+tag)
			require.NoError(t, err, "Push to %s", tarball)
		}},
		{"copy", func(t *testing.T, tarball, tag string) {
			_, err := c.Copy(ctx, src+":"+tag, "oci-layout://"+tarball)
			require.NoError(t, err, "Copy to %s", tarball)
		}},
		{"export", func(t *testing.T, tarball, tag string) {
			_, err := c.Export(ctx, src+":"+tag, tarball)
			require.NoError(t, err, "Export to %s", tarball)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tarball := filepath.Join(t.TempDir(), "lay.tar")
			tc.write(t, tarball, "v1")
			fi, err := os.Stat(tarball)
			require.NoError(t, err)
			assert.True(t, fi.Mode().IsRegular(), "%s is a file, not a %v", tarball, fi.Mode().Type())
			tc.write(t, tarball, "v2")
			fi, err = os.Stat(tarball)
			require.NoError(t, err)
			assert.True(t, fi.Mode().IsRegular(), "%s is still a file", tarball)
			entries, err := os.ReadDir(filepath.Dir(tarball))
			require.NoError(t, err)
			assert.Len(t, entries, 1, "no temporary file or directory is left beside the tarball: %v", entries)

			for tag, want := range map[string]*bundle.Pushed{"v1": first, "v2": second} {
				b, err := client(t, bundle.WithVerifyKey(bundle.VerifyRequired, key.certs...)).Pull(ctx, "oci-layout://"+tarball+":"+tag)
				require.NoError(t, err, "Pull %s:%s", tarball, tag)
				assert.Equal(t, want.Digest, b.Digest, "%s:%s", tarball, tag)
				assert.True(t, b.Verified, "the signature is in the tarball")
			}
		})
	}

	t.Run("not a layout", func(t *testing.T) {
		tarball := filepath.Join(t.TempDir(), "junk.tar")
		require.NoError(t, os.WriteFile(tarball, []byte("not a tarball"), 0o644))
		_, err := signing.Push(ctx, catalogDir, "oci-layout://"+tarball+":v1")
		assert.ErrorContains(t, err, "reading the OCI layout tarball "+tarball)
		data, err := os.ReadFile(tarball)
		require.NoError(t, err)
		assert.Equal(t, "not a tarball", string(data), "a failed write leaves the file as it was")
	})
}

// A tag a layout (a directory or a tarball) does not hold is refused
// naming the tag, the layout and the tags it holds, not "not found: not
// found; check the repository".
func TestLayoutTagNotFound(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"dir", "lay.tar"} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), name)
			for _, tag := range []string{"v2", "v1"} {
				_, err := client(t).Push(ctx, catalogDir, "oci-layout://"+p+":"+tag)
				require.NoError(t, err)
			}
			_, err := client(t).Pull(ctx, "oci-layout://"+p+":v3")
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "not found: not found")
			assert.ErrorContains(t, err, "tag v3 is not in the OCI layout "+p+", which holds the tags [v1 v2]; write oci-layout://"+p+":TAG with one of them")
		})
	}
}
