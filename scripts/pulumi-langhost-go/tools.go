//go:build tools

// Package tools pins the Go language host (`pulumi-language-go`) that scripts/pulumi-cli builds for
// `--bin-dir go`. The host's own module (…/sdk/go/pulumi-language-go/v3) cannot be fetched here, but
// up to sdk/v3 v3.66.0 the host was a package of the sdk/v3 module, which can. Like ../pulumi-langhost
// it copies that go.mod's replace of golang.org/x/text.
package tools

import (
	_ "github.com/pulumi/pulumi/sdk/v3/go/pulumi-language-go"
)
