// The accessctl guardrails as a Pulumi policy pack. Run it from any program (TypeScript, Python, Go,
// YAML): `pulumi preview --policy-pack <this directory>`. Each policy's enforcement level and settings
// come from `--policy-pack-config <file.json>`; their reference: docs/guides/guardrails.md in
// @accessctl/pulumi. Add policies of your own to the list.
"use strict";
const { PolicyPack } = require("@pulumi/policy");
const { policies } = require("@accessctl/pulumi/policy");

new PolicyPack("accessctl-guardrails", { policies });
