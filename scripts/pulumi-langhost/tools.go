//go:build tools

// Package tools pins the Node.js language host (`pulumi-language-nodejs`) that runs `pulumi up` of
// a project directory in the tests and `npm start`. Its own Go module cannot be fetched here, but
// up to sdk/v3 v3.68.0 the host was a package of the sdk/v3 module, which can: so this module pins
// that. It is separate from ../pulumi-tools because the CLI there pins sdk/v3 v3.259.0.
package tools

import (
	_ "github.com/pulumi/pulumi/sdk/v3/nodejs/cmd/pulumi-language-nodejs"
)
