//go:build tools

// Package tools pins the YAML language host (`pulumi-language-yaml`) that scripts/pulumi-cli builds
// for `--bin-dir yaml`. pulumi-yaml v1.38.1 needs pkg/v3 v3.255.0; this module raises that to the
// CLI's v3.259.0 (go.mod, an indirect requirement kept on purpose) so that the two builds select the
// same versions of everything but github.com/pulumi/inflector, and Go's build cache serves most of
// pkg/v3 and its dependencies from the CLI's build. It is not part of ../pulumi-tools because
// pulumi-yaml would raise inflector there (v0.1.1 to v0.2.1), which the CLI and sdkgen then use.
package tools

import (
	_ "github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml"
)
