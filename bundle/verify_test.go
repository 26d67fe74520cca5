package bundle_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/bundle"
)

// Verification with no certificate is refused up front, once, whatever
// the bundle (signed twice, or a registry that is not there), rather than
// once per signature; and the refusal of an unsigned bundle names the
// option that accepts one.
func TestVerifyMessages(t *testing.T) {
	ctx := context.Background()
	a, b := newKey(t, "release team"), newKey(t, "second signer")
	layout := "oci-layout://" + filepath.Join(t.TempDir(), "l") + ":v1"
	_, err := client(t, bundle.WithSigningKey(a.key, a.certs)).Push(ctx, catalogDir, layout)
	require.NoError(t, err)
	_, err = client(t, bundle.WithSigningKey(b.key, b.certs)).Push(ctx, catalogDir, layout)
	require.NoError(t, err, "a second signature")
	unsigned := "oci-layout://" + filepath.Join(t.TempDir(), "u") + ":v1"
	_, err = client(t).Push(ctx, catalogDir, unsigned)
	require.NoError(t, err)

	tests := []struct {
		name, ref string
		opt       bundle.Option
		want      string
		wantIs    error
	}{
		{"required, no certificate", layout, bundle.WithVerifyKey(bundle.VerifyRequired),
			"WithVerifyKey(VerifyRequired) was given no certificate, so no signature could verify; give the certificates of the signing keys (the CLI's --verify-key CERT)", bundle.ErrSignature},
		{"optional, no certificate", layout, bundle.WithVerifyKey(bundle.VerifyOptional),
			"WithVerifyKey(VerifyOptional) was given no certificate", bundle.ErrSignature},
		{"no certificate, no registry", "oci://127.0.0.1:1/hopdag/catalog:v1", bundle.WithVerifyKey(bundle.VerifyRequired),
			"was given no certificate", bundle.ErrSignature},
		{"unsigned", unsigned, bundle.WithVerifyKey(bundle.VerifyRequired, a.certs...),
			"or accept unsigned bundles (VerifyOptional; the CLI's --verify optional)", bundle.ErrUnsigned},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client(t, tc.opt).Pull(ctx, tc.ref)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.wantIs)
			assert.ErrorContains(t, err, tc.want)
			assert.NotContains(t, err.Error(), "no trusted certificates")
			assert.Equal(t, 1, strings.Count(err.Error(), tc.want), "one reason, not one per signature: %v", err)
		})
	}
}
