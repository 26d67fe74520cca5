package bundle_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/bundle"
	"github.com/hopdag/hopdag/bundle/bundletest"
)

// A push that cannot sign leaves the tag where it was: after a signed
// push, a push of another catalog with a key that is not its
// certificate's, or with a certificate notation refuses to sign with (a CA's),
// fails, and the tag still names the signed bundle,
// which verifies. The key check comes before anything is pushed.
func TestPushFailingToSignKeepsTheTag(t *testing.T) {
	ctx := context.Background()
	good, other := newKey(t, "release team"), newKey(t, "someone else")
	changed := copyDir(t, catalogDir)
	appendComment(t, filepath.Join(changed, "releases.yaml"), "another build")
	tests := []struct {
		name    string
		signing bundle.Option
		wantMsg string
		// pushed: the failure is notation's, after the bundle was pushed
		// untagged.
		pushed bool
	}{
		{"key of another certificate", bundle.WithSigningKey(other.key, good.certs), "do not belong together", false},
		{"no certificate", bundle.WithSigningKey(good.key, nil), "needs its certificate", false},
		{"a CA certificate", bundle.WithSigningKey(good.key, []*x509.Certificate{notForCodeSigning(t, good.key)}), "the tag v26.09 was not moved", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := bundletest.Start(t)
			ref := r.Ref("hopdag/prod:v26.09")
			first, err := client(t, bundle.WithSigningKey(good.key, good.certs)).Push(ctx, catalogDir, ref)
			require.NoError(t, err, "the first, signed push")

			p, err := client(t, tc.signing).Push(ctx, changed, ref)
			require.Error(t, err, "Push with %s", tc.name)
			assert.Nil(t, p)
			assert.ErrorContains(t, err, tc.wantMsg)
			t.Logf("%s: %v", tc.name, err)

			b, err := client(t, bundle.WithVerifyKey(bundle.VerifyRequired, good.certs...)).Fetch(ctx, ref)
			require.NoError(t, err, "the tag still names a bundle that verifies")
			assert.Equal(t, first.Digest, b.Digest, "the tag did not move")

			// What the failed push left in the registry: nothing, or its
			// bundle under no tag.
			unsigned, err := client(t).Push(ctx, changed, "oci-layout://"+filepath.Join(t.TempDir(), "l")+":x")
			require.NoError(t, err)
			_, err = client(t).Fetch(ctx, r.Ref("hopdag/prod@"+unsigned.Digest.String()))
			if tc.pushed {
				assert.NoError(t, err, "the bundle was pushed by digest before signing")
			} else {
				assert.ErrorContains(t, err, "not found", "nothing was pushed")
			}
		})
	}
}

// ReadKeyFiles refuses a key and a certificate that do not belong
// together, naming both files.
func TestReadKeyFilesMismatch(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	key1, cert1, err := bundle.GenerateKey("release", time.Hour)
	require.NoError(t, err)
	key2, _, err := bundle.GenerateKey("other", time.Hour)
	require.NoError(t, err)
	releaseKey, releaseCert, otherKey := write("release.key", key1), write("release.crt", cert1), write("other.key", key2)

	_, _, err = bundle.ReadKeyFiles(releaseKey, releaseCert)
	require.NoError(t, err, "a key and its certificate")
	_, _, err = bundle.ReadKeyFiles(otherKey, releaseCert)
	require.Error(t, err)
	assert.ErrorContains(t, err, "the signing key "+otherKey+" and the certificate "+releaseCert+" do not belong together")
}

// notForCodeSigning is a self-signed CA certificate of key, which
// notation refuses to sign with (only when it signs).
func notForCodeSigning(t *testing.T, key crypto.PrivateKey) *x509.Certificate {
	t.Helper()
	signer := key.(crypto.Signer)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "ca only"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, signer.Public(), signer)
	require.NoError(t, err)
	certs, err := bundle.ParseCertificates(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	require.NoError(t, err)
	return certs[0]
}
