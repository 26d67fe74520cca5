package bundle

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"
	"time"

	"github.com/notaryproject/notation-core-go/signature/cose"
	"github.com/notaryproject/notation-go"
	notationreg "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/signer"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"github.com/notaryproject/notation-go/verifier/truststore"
	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2"
)

// SignatureArtifactType is the artifact type of the signature manifests
// (Notary Project).
const SignatureArtifactType = "application/vnd.cncf.notary.signature"

// Verification says how Pull checks signatures.
type Verification int

const (
	// VerifyOff does not look at signatures.
	VerifyOff Verification = iota
	// VerifyOptional accepts an unsigned bundle, but refuses one whose
	// signatures the key does not verify.
	VerifyOptional
	// VerifyRequired refuses an unsigned bundle too.
	VerifyRequired
)

func (v Verification) String() string {
	switch v {
	case VerifyOff:
		return "VerifyOff"
	case VerifyOptional:
		return "VerifyOptional"
	case VerifyRequired:
		return "VerifyRequired"
	}
	return fmt.Sprintf("Verification(%d)", int(v))
}

// GenerateKey makes an ECDSA P-256 private key and a self-signed X.509
// code-signing certificate for commonName, valid for the given time from
// now, both PEM-encoded: what WithSigningKey and WithVerifyKey read (as
// `notation cert generate-test` makes for Notary Project signatures).
func GenerateKey(commonName string, valid time.Duration) (keyPEM, certPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"hopdag"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(valid),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// ParseCertificates reads PEM certificates (the signing certificate first,
// then its chain).
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("bundle: certificate: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("bundle: no PEM CERTIFICATE block found; give the X.509 certificate of the signing key (hopdag bundle keygen writes one)")
	}
	return out, nil
}

// ParsePrivateKey reads a PEM private key (PKCS#8, PKCS#1 or EC).
func ParsePrivateKey(data []byte) (crypto.PrivateKey, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, errors.New("bundle: no PEM PRIVATE KEY block found")
		}
		if !strings.Contains(b.Type, "PRIVATE KEY") {
			continue
		}
		if k, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
			return k, nil
		}
		if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
			return k, nil
		}
		k, err := x509.ParsePKCS1PrivateKey(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("bundle: private key: %w", err)
		}
		return k, nil
	}
}

// ReadKeyFiles reads a PEM private key and its PEM certificate chain.
func ReadKeyFiles(keyFile, certFile string) (crypto.PrivateKey, []*x509.Certificate, error) {
	kdata, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("bundle: signing key: %w", err)
	}
	key, err := ParsePrivateKey(kdata)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", keyFile, err)
	}
	certs, err := ReadCertificates(certFile)
	if err != nil {
		return nil, nil, err
	}
	if !keyOf(key, certs[0]) {
		return nil, nil, fmt.Errorf("bundle: the signing key %s and the certificate %s do not belong together: %s is not the private key of %s (%s); give the certificate made with the key (hopdag bundle keygen writes NAME.key and NAME.crt)",
			keyFile, certFile, keyFile, certFile, certs[0].Subject)
	}
	return key, certs, nil
}

// keyOf reports whether key is the private key of cert.
func keyOf(key crypto.PrivateKey, cert *x509.Certificate) bool {
	s, ok := key.(crypto.Signer)
	if !ok {
		return false
	}
	pub, ok := s.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(cert.PublicKey)
}

// ReadCertificates reads a PEM certificate file.
func ReadCertificates(file string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("bundle: certificate: %w", err)
	}
	certs, err := ParseCertificates(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return certs, nil
}

// sign attaches a Notary Project signature of desc (in target) to it.
func sign(ctx context.Context, s notation.Signer, target oras.GraphTarget, d digest.Digest) error {
	_, err := notation.Sign(ctx, s, notationreg.NewRepository(target), notation.SignOptions{
		ArtifactReference: d.String(),
		SignerSignOptions: notation.SignerSignOptions{SignatureMediaType: cose.MediaTypeEnvelope, SigningAgent: "hopdag"},
	})
	return err
}

// newSigner checks that key is the private key of the signing certificate
// (certs[0]): notation finds out only when it signs.
func newSigner(key crypto.PrivateKey, certs []*x509.Certificate) (notation.Signer, error) {
	if len(certs) == 0 {
		return nil, errors.New("a signing key needs its certificate (WithSigningKey's certs; the CLI's --sign-cert)")
	}
	if !keyOf(key, certs[0]) {
		return nil, fmt.Errorf("the signing key and the signing certificate (%s) do not belong together: the key is not the certificate's private key; give the certificate made with the key", certs[0].Subject)
	}
	return signer.NewGenericSigner(key, certs)
}

// certStore is a trust store of the configured certificates.
type certStore []*x509.Certificate

func (s certStore) GetCertificates(context.Context, truststore.Type, string) ([]*x509.Certificate, error) {
	return s, nil
}

// newVerifier trusts signatures made by certs (or a chain ending in one of
// them), for any repository, with no revocation lookup: verification works
// offline.
func newVerifier(certs []*x509.Certificate) (notation.Verifier, error) {
	policy := &trustpolicy.Document{
		Version: "1.0",
		TrustPolicies: []trustpolicy.TrustPolicy{{
			Name:           "hopdag",
			RegistryScopes: []string{"*"},
			SignatureVerification: trustpolicy.SignatureVerification{
				VerificationLevel: trustpolicy.LevelStrict.Name,
				Override:          map[trustpolicy.ValidationType]trustpolicy.ValidationAction{trustpolicy.TypeRevocation: trustpolicy.ActionSkip},
			},
			TrustStores:       []string{"ca:hopdag"},
			TrustedIdentities: []string{"*"},
		}},
	}
	return verifier.New(policy, certStore(certs), nil)
}

// verify checks the signatures of digest d in target, which holds the
// bundle and its referrers. It returns an error matching ErrUnsigned when
// there is none, ErrSignature when none verifies.
func verify(ctx context.Context, v notation.Verifier, target oras.GraphTarget, artifact string) error {
	_, _, err := notation.Verify(ctx, v, notationreg.NewRepository(target), notation.VerifyOptions{ArtifactReference: artifact, MaxSignatureAttempts: 50})
	if err == nil {
		return nil
	}
	var none notation.SignatureRetrievalFailedError
	if errors.As(err, &none) && strings.Contains(none.Msg, "no signature is associated") {
		return unsignedError{"no signature is attached to the bundle; sign it when pushing (hopdag bundle push --sign-key KEY --sign-cert CERT), or accept unsigned bundles (VerifyOptional; the CLI's --verify optional)"}
	}
	return fmt.Errorf("%w: %s; verify with the certificate of the key the bundle was signed with (hopdag bundle push --sign-key KEY --sign-cert CERT: --verify-key CERT), or sign it again with the key of this certificate", ErrSignature, notationReason(err))
}

// notationReason is notation's error without its empty lead-in.
func notationReason(err error) string {
	var parts []string
	for _, line := range strings.Split(err.Error(), "\n") {
		if line = strings.TrimSpace(line); line != "" && line != "signature verification failed" {
			parts = append(parts, line)
		}
	}
	if len(parts) == 0 {
		return err.Error()
	}
	return strings.Join(parts, "; ")
}
