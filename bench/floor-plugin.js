// The floor of the memory bench for the plugin (`npm run bench -- --only memory`): the plugin's own
// process (its gRPC server, plugin/wire.ts, Configure, each operation run as ours are, by
// provider/operation.ts, which collects after a large one: provider/memory.ts) with an
// IpPolicyRuleSet that does no work and calls nothing, as bench/floor-set.ts does for the dynamic
// host: check keys the declared rules by CIDR, create makes up the outputs a set would have, read hands
// back what it got and the inputs it would declare, diff says nothing changed, delete does nothing.
// What the process holds is then the plugin's own, for properties of this size. The bench bundles this
// file as the plugin's script (scripts/plugin.js build) into a tarball of its own; needs a build (dist/).
"use strict";
const { RESOURCES } = require("../dist/plugin/server.js");

const declared = (rules) =>
  Object.fromEntries(Object.entries(rules).map(([cidr, r]) => [cidr, { cidr, action: r.action }]));

const floor = {
  async check(_olds, news) {
    const rules = Object.fromEntries(news.rules.map((r) => [r.cidr, { cidr: r.cidr, action: r.action }]));
    return { inputs: { ipPolicyId: news.ipPolicyId, rules }, failures: [] };
  },
  async create(inputs) {
    const at = new Date(0).toISOString();
    const rules = Object.fromEntries(
      Object.entries(inputs.rules).map(([cidr, r], i) => {
        const id = `ipr_${String(i).padStart(24, "0")}`;
        const uri = `http://127.0.0.1:40000/ip_policy_rules/${id}`;
        return [cidr, { id, cidr, action: r.action, description: "", metadata: "", uri, createdAt: at }];
      }),
    );
    return { id: inputs.ipPolicyId, outs: { ipPolicyId: inputs.ipPolicyId, rules } };
  },
  async read(id, props) {
    const inputs = { ipPolicyId: props.ipPolicyId, rules: declared(props.rules) };
    return { id, props: { ipPolicyId: props.ipPolicyId, rules: props.rules }, inputs };
  },
  async diff() {
    return { changes: false, replaces: [] };
  },
  async update(_id, _olds, news) {
    return { outs: news };
  },
  async delete() {},
};

RESOURCES["accessctl:index:IpPolicyRuleSet"].load = () => floor;
require("../dist/plugin/main.js");
