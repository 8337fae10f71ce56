// The program of the end-to-end tests, as a user would write it against the installed package.
// What it declares comes from the stack config `spec`:
//   { keys: {name: ApiKeyArgs}, rules: {name: IpPolicyRuleArgs}, modules: {name: TlsEdgeMutualTlsArgs},
//     listPolicy?: "ipp_…" (export what the list helpers see, before this run's changes) }
"use strict";
const pulumi = require("@pulumi/pulumi");
const accessctl = require("@accessctl/pulumi");

const spec = new pulumi.Config().requireObject("spec");
const out = {};
for (const [name, args] of Object.entries(spec.keys || {})) {
  const key = new accessctl.ApiKey(name, args);
  out[`key_${name}`] = { id: key.id, ownerId: key.ownerId, description: key.description };
  out[`token_${name}`] = key.token;
}
for (const [name, args] of Object.entries(spec.rules || {})) {
  const rule = new accessctl.IpPolicyRule(name, args);
  out[`rule_${name}`] = { id: rule.id, cidr: rule.cidr, action: rule.action };
}
for (const [name, args] of Object.entries(spec.modules || {})) {
  const module = new accessctl.TlsEdgeMutualTls(name, args);
  out[`module_${name}`] = { id: module.id, enabled: module.enabled, certificateAuthorityIds: module.certificateAuthorityIds };
}
if (spec.listPolicy) {
  out.listedRuleCidrs = accessctl.listIpPolicyRules({ ipPolicyId: spec.listPolicy }).then((rules) => rules.map((r) => r.cidr).sort());
  out.listedKeyDescriptions = accessctl.listApiKeys().then((keys) => keys.map((k) => k.description).sort());
}
out.nodeVersion = process.versions.node; // the Node.js that ran the program (tests check which)
module.exports = out;
