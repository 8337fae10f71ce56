//go:build tools

// Package tools pins the Pulumi CLI that the tests and `npm start` build when no
// fitting `pulumi` is installed. Keep the version equal to @pulumi/pulumi in
// package.json (scripts/pulumi-cli checks that).
package tools

import (
	_ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
)
