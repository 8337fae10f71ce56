//go:build tools

// Package tools pins the Python language host (`pulumi-language-python`) that scripts/pulumi-cli
// builds for `--bin-dir python`, with `pulumi-language-python-exec`, a script of the same module.
// The host's own module (…/sdk/python/cmd/pulumi-language-python/v3) cannot be fetched here, but up
// to sdk/v3 v3.79.0 the host was a package of the sdk/v3 module, which can. Like ../pulumi-langhost
// it copies that go.mod's replace of golang.org/x/text.
package tools

import (
	_ "github.com/pulumi/pulumi/sdk/v3/python/cmd/pulumi-language-python"
)
