// The program of the end-to-end tests, as a user would write it against the installed package.
// What it declares comes from the stack config `spec`:
//   { keys: {name: ApiKeyArgs}, rules: {name: IpPolicyRuleArgs}, modules: {name: TlsEdgeMutualTlsArgs},
//     sets: {name: IpPolicyRuleSetArgs},
//     listPolicy?: "ipp_…" (export what the list helpers see, before this run's changes), idsOnly?: sets export their id only,
//     plugin?: the classes of @accessctl/pulumi/plugin, pluginFor?: [names] only these resources from it,
//     secretTexts?: the sets' rule descriptions secret, ruleIdOf?: "<cidr>" (each set exports that rule's id, as the README's program),
//     opts?: {name: resource options}, gets?: {name: {type: "ApiKey"|"IpPolicyRule"|"TlsEdgeMutualTls", id}} }
"use strict";
const pulumi = require("@pulumi/pulumi");

const spec = new pulumi.Config().requireObject("spec");
// plugin: the same classes backed by the plugin pulumi-resource-accessctl (it must be installed).
const accessctl = spec.plugin ? require("@accessctl/pulumi/plugin") : require("@accessctl/pulumi");
// A program may use both hosts at once (a stack half-way to the plugin).
const classesOf = (name) => ((spec.pluginFor || []).includes(name) ? require("@accessctl/pulumi/plugin") : accessctl);
const out = {};
for (const [name, args] of Object.entries(spec.keys || {})) {
  const key = new (classesOf(name).ApiKey)(name, args, (spec.opts || {})[name]);
  out[`key_${name}`] = { id: key.id, ownerId: key.ownerId, description: key.description };
  out[`token_${name}`] = key.token;
}
for (const [name, args] of Object.entries(spec.rules || {})) {
  const rule = new (classesOf(name).IpPolicyRule)(name, args, (spec.opts || {})[name]);
  out[`rule_${name}`] = { id: rule.id, cidr: rule.cidr, action: rule.action };
}
for (const [name, args] of Object.entries(spec.sets || {})) {
  // secretTexts: each rule's description a secret, as a program reading it from secret config has it.
  const rules = spec.secretTexts
    ? args.rules.map((r) => (r.description ? { ...r, description: pulumi.secret(r.description) } : r))
    : args.rules;
  const set = new (classesOf(name).IpPolicyRuleSet)(name, { ...args, rules }, (spec.opts || {})[name]);
  // idsOnly: a stack output of every rule would make each preview print every rule (new values are the inputs then).
  out[`set_${name}`] = spec.idsOnly ? { id: set.id } : { id: set.id, ipPolicyId: set.ipPolicyId, rules: set.rules };
  if (spec.ruleIdOf) out[`ruleId_${name}`] = set.rules.apply((r) => r[spec.ruleIdOf].id);
}
for (const [name, args] of Object.entries(spec.modules || {})) {
  const module = new (classesOf(name).TlsEdgeMutualTls)(name, args);
  out[`module_${name}`] = {
    id: module.id,
    enabled: module.enabled,
    certificateAuthorityIds: module.certificateAuthorityIds,
  };
}
for (const [name, { type, id }] of Object.entries(spec.gets || {})) {
  const found = accessctl[type].get(name, id); // read-only lookup by id
  out[`get_${name}`] = { id: found.id, description: found.description, cidr: found.cidr, enabled: found.enabled };
}
if (spec.listPolicy) {
  out.listedRuleCidrs = accessctl
    .listIpPolicyRules({ ipPolicyId: spec.listPolicy })
    .then((rules) => rules.map((r) => r.cidr).sort());
  out.listedKeyDescriptions = accessctl.listApiKeys().then((keys) => keys.map((k) => k.description).sort());
}
out.nodeVersion = process.versions.node; // the Node.js that ran the program (tests check which)
module.exports = out;
