// Command sdkgen writes the SDK that `pulumi package add` generates for a TypeScript or Go program,
// from a package schema on stdin, with Pulumi's own generators (pkg/v3/codegen/nodejs and go, the code
// those languages' hosts run for it). The tests use it where the hosts cannot be built (see
// docs/development.md): to compile examples/typescript and examples/go against the SDKs users get.
//
// Usage: sdkgen nodejs|go OUT_DIR < schema.json
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/blang/semver"
	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// noPackages is the loader of a schema that refers to no other package: the MiniCluster's refers
// only to its own types and Pulumi's built-in ones.
type noPackages struct{}

func (noPackages) LoadPackage(pkg string, _ *semver.Version) (*schema.Package, error) {
	return nil, fmt.Errorf("the schema refers to package %s, which sdkgen does not load", pkg)
}

func (l noPackages) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return l.LoadPackage(d.Name, d.Version)
}

func (noPackages) LoadPackageReference(pkg string, _ *semver.Version) (schema.PackageReference, error) {
	return nil, fmt.Errorf("the schema refers to package %s, which sdkgen does not load", pkg)
}

func (l noPackages) LoadPackageReferenceV2(
	_ context.Context, d *schema.PackageDescriptor,
) (schema.PackageReference, error) {
	return l.LoadPackageReference(d.Name, d.Version)
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sdkgen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 2 || (args[0] != "nodejs" && args[0] != "go") {
		return fmt.Errorf("usage: sdkgen nodejs|go OUT_DIR < schema.json")
	}
	var spec schema.PackageSpec
	if err := json.NewDecoder(os.Stdin).Decode(&spec); err != nil {
		return fmt.Errorf("reading the schema: %w", err)
	}
	pkg, diags, err := schema.BindSpec(spec, noPackages{}, schema.ValidationOptions{})
	if err != nil {
		return err
	}
	if diags.HasErrors() {
		return diags
	}
	pkg.SupportPack = true // as `pulumi package add` sets it
	var files map[string][]byte
	if args[0] == "nodejs" {
		files, err = nodejs.GeneratePackage("pulumi", pkg, nil, nil, true /* a local SDK */, noPackages{})
	} else {
		files, err = gogen.GeneratePackage("pulumi", pkg, nil)
	}
	if err != nil {
		return err
	}
	for name, content := range files {
		path := filepath.Join(args[1], name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}
