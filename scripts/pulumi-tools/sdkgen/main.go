// Command pulumi-sdkgen writes the SDKs of a Pulumi package schema with Pulumi's own code generators
// (pkg/v3 codegen/nodejs, codegen/python, codegen/go), called in-process the way the current language
// hosts call them for `pulumi package gen-sdk`. The hosts we can build here (see scripts/pulumi-cli)
// do not implement GeneratePackage, so `pulumi package gen-sdk` cannot do this with them.
//
//	pulumi-sdkgen [--version X.Y.Z] <schema.json> <out-dir> <language>...
//
// language is nodejs, python or go. For each, <out-dir>/<language> is removed, then written with
// the files `pulumi package gen-sdk <schema.json> --language <language> --out <out-dir>` writes, with
// one difference: the Node.js SDK's package.json gets the schema's version in place of the
// "${VERSION}" placeholder the generator leaves there (npm refuses to install it otherwise).
// --version overrides the schema's version, as gen-sdk's flag does. Files are written 0644 in
// 0755 directories (gen-sdk writes 0600 and 0700).
//
// References to other packages' schemas are not resolved (gen-sdk would load those providers).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/blang/semver"
	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

func main() {
	// A flag set of its own: the global one holds the flags Pulumi's packages register (glog's).
	flags := flag.NewFlagSet("pulumi-sdkgen", flag.ExitOnError)
	flags.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: pulumi-sdkgen [--version X.Y.Z] <schema.json> <out-dir> <nodejs|python|go>...")
		flags.PrintDefaults()
	}
	version := flags.String("version", "", "the package version to generate for (default: the schema's)")
	_ = flags.Parse(os.Args[1:])
	if flags.NArg() < 3 {
		flags.Usage()
		os.Exit(2)
	}
	if err := run(flags.Arg(0), flags.Arg(1), flags.Args()[2:], *version); err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-sdkgen: %v\n", err)
		os.Exit(1)
	}
}

func run(schemaPath, outDir string, languages []string, version string) error {
	for _, lang := range languages {
		if lang != "nodejs" && lang != "python" && lang != "go" {
			return fmt.Errorf("unknown language %q (nodejs, python or go)", lang)
		}
	}
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("%s: %w", schemaPath, err)
	}
	// What the CLI does: bind the spec, set --version, then hand pkg.MarshalJSON() to the language
	// host, which binds that again and generates from it.
	pkg, err := bind(spec)
	if err != nil {
		return err
	}
	if version != "" {
		v, err := semver.Parse(version)
		if err != nil {
			return fmt.Errorf("invalid version %q: %w", version, err)
		}
		pkg.Version = &v
	}
	marshalled, err := pkg.MarshalJSON()
	if err != nil {
		return err
	}
	for _, lang := range languages {
		// Each language binds its own copy: the generators record language info in the package.
		var spec schema.PackageSpec
		if err := json.Unmarshal(marshalled, &spec); err != nil {
			return err
		}
		pkg, err := bind(spec)
		if err != nil {
			return err
		}
		var files map[string][]byte
		switch lang {
		case "nodejs":
			files, err = nodejs.GeneratePackage("pulumi-language-nodejs", pkg, nil, nil, false, noLoader{})
			if err == nil && pkg.Version != nil {
				if pj, ok := files["package.json"]; ok {
					files["package.json"] = bytes.ReplaceAll(pj, []byte(`"${VERSION}"`), []byte(`"`+pkg.Version.String()+`"`))
				}
			}
		case "python":
			files, err = python.GeneratePackage("pulumi-language-python", pkg, nil, noLoader{})
		case "go":
			files, err = gogen.GeneratePackage("pulumi-language-go", pkg, nil)
		}
		if err != nil {
			return fmt.Errorf("generating the %s SDK: %w", lang, err)
		}
		if err := write(filepath.Join(outDir, lang), files); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "pulumi-sdkgen: wrote %d files to %s\n", len(files), filepath.Join(outDir, lang))
	}
	return nil
}

func bind(spec schema.PackageSpec) (*schema.Package, error) {
	pkg, diags, err := schema.BindSpec(spec, noLoader{}, schema.ValidationOptions{AllowDanglingReferences: true})
	if err != nil {
		return nil, err
	}
	if diags.HasErrors() {
		return nil, diags
	}
	for _, d := range diags {
		fmt.Fprintf(os.Stderr, "pulumi-sdkgen: warning: %s\n", d.Error())
	}
	return pkg, nil
}

func write(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// noLoader refuses every other package: this tool resolves no references to other providers' schemas.
type noLoader struct{}

var errNoLoader = errors.New("pulumi-sdkgen loads no other packages' schemas")

func (noLoader) LoadPackage(name string, _ *semver.Version) (*schema.Package, error) {
	return nil, fmt.Errorf("package %s: %w", name, errNoLoader)
}

func (noLoader) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return nil, fmt.Errorf("package %s: %w", d.Name, errNoLoader)
}

func (noLoader) LoadPackageReference(name string, _ *semver.Version) (schema.PackageReference, error) {
	return nil, fmt.Errorf("package %s: %w", name, errNoLoader)
}

func (noLoader) LoadPackageReferenceV2(_ context.Context, d *schema.PackageDescriptor) (schema.PackageReference, error) {
	return nil, fmt.Errorf("package %s: %w", d.Name, errNoLoader)
}
