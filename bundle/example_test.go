package bundle_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hopdag/hopdag/bundle"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/runner"
)

// A signed bundle in an OCI image layout, loaded with no registry: the
// offline package of an air-gapped site. With a registry the references
// read oci://registry.example/hopdag/catalog:v26.09.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "hopdag-example-")
	defer os.RemoveAll(dir)

	keyPEM, certPEM, err := bundle.GenerateKey("release team", 24*time.Hour)
	if err != nil {
		panic(err)
	}
	key, _ := bundle.ParsePrivateKey(keyPEM)
	certs, _ := bundle.ParseCertificates(certPEM)

	ref := "oci-layout://" + filepath.Join(dir, "offline") + ":v26.09"
	pushed, err := bundle.New(bundle.WithSigningKey(key, certs)).Push(ctx, "../testdata/catalog", ref)
	if err != nil {
		panic(err)
	}
	fmt.Println("pushed", len(pushed.Files), "files, signed:", pushed.Signed)

	b, err := bundle.New(bundle.WithVerifyKey(bundle.VerifyRequired, certs...)).Pull(ctx, ref)
	if err != nil {
		panic(err)
	}
	fmt.Println("verified:", b.Verified, "same digest:", b.Digest == pushed.Digest)
	fmt.Println("versions:", b.Annotations[bundle.AnnotationVersions])

	plan, err := runner.NewPlan(b.Catalog, path.MustParseState("v26.06-rc.2"), path.MustParseState("v26.09"))
	if err != nil {
		panic(err)
	}
	plan.Catalog = b.Source() // the plan and the status name the digest
	fmt.Println(len(plan.Hops), "hops, catalog digest recorded:", plan.Catalog.Digest == pushed.Digest.String())

	// Output:
	// pushed 20 files, signed: true
	// verified: true same digest: true
	// versions: v26.03,v26.06-rc.1,v26.06-rc.2,v26.06-rc.3,v26.06,v26.06.1,v26.09-rc.1,v26.09
	// 3 hops, catalog digest recorded: true
}

// The reference forms every bundle function (and every hopdag command that
// takes a catalog) accepts.
func ExampleParseLocation() {
	for _, ref := range []string{
		"oci://registry.example/hopdag/catalog:v26.09",
		"localhost:5000/hopdag/catalog@sha256:7d3b6e9c09829705aa046f4dac77622f34d3ea275afffb8f6f1735d8e551b2be",
		"oci-layout:///media/usb/hopdag.tar:v26.09",
	} {
		loc, err := bundle.ParseLocation(ref)
		if err != nil {
			panic(err)
		}
		fmt.Printf("registry=%q repository=%q layout=%q tag=%q digest=%.19s\n", loc.Registry, loc.Repository, loc.Layout, loc.Tag, loc.Digest)
	}
	// Output:
	// registry="registry.example" repository="hopdag/catalog" layout="" tag="v26.09" digest=
	// registry="localhost:5000" repository="hopdag/catalog" layout="" tag="" digest=sha256:7d3b6e9c0982
	// registry="" repository="" layout="/media/usb/hopdag.tar" tag="v26.09" digest=
}
