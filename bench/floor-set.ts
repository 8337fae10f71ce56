// The floor of the memory bench (`npm run bench -- --only memory`): what Pulumi's dynamic-provider
// host alone costs for a resource the size of an IpPolicyRuleSet of N rules. A dynamic provider that
// does no work and calls nothing: check keys the declared rules by CIDR, create makes up the outputs a
// set would have (each rule with an id, uri and creation time), read hands back what it got and the
// inputs it would declare, diff says nothing changed, delete does nothing. Same config as
// examples/office-allowlist (ipPolicyId, allow: a list of CIDRs). What the host's process holds is
// then the host's own: the request and response messages it makes of these properties.
// Fair to ours: each operation ends as ours does (provider/operation.ts), by the same afterOperation
// of provider/memory.ts, which collects after an operation that grew the heap by 32 MB. Without it
// the floor kept the garbage of one call through the next ones and was no floor (issue 40).
// With config `compact: true` the floor keeps `rules` (checked inputs and outputs) as one JSON text:
// the least a compact internal form of the properties could cost this host (the program's own list
// of rules still reaches check as it is). The bench's host "floorCompact".
import * as pulumi from "@pulumi/pulumi";
import { afterOperation } from "@accessctl/pulumi/dist/provider/memory.js";

type Rule = { cidr: string; action: string };
const compact = new pulumi.Config().getBoolean("compact") ?? false;
// The rules as this floor keeps them in its properties (compact: one text), and back.
const kept = (rules: unknown) => (compact ? JSON.stringify(rules) : rules);
const given = (rules: unknown) => (compact ? JSON.parse(rules as string) : rules);
const declared = (rules: Record<string, Rule>) =>
  Object.fromEntries(Object.entries(rules).map(([cidr, r]) => [cidr, { cidr, action: r.action }]));

const doNothing: pulumi.dynamic.ResourceProvider = {
  async check(_olds: any, news: any) {
    const rules = Object.fromEntries((news.rules as Rule[]).map((r) => [r.cidr, { cidr: r.cidr, action: r.action }]));
    return { inputs: { ipPolicyId: news.ipPolicyId, rules: kept(rules) } };
  },
  async create(inputs: any) {
    const at = new Date(0).toISOString();
    const declaredRules = Object.entries(given(inputs.rules) as Record<string, Rule>);
    const rules = Object.fromEntries(
      declaredRules.map(([cidr, r], i) => {
        const id = `ipr_${String(i).padStart(24, "0")}`;
        return [
          cidr,
          {
            id,
            cidr,
            action: r.action,
            description: "",
            metadata: "",
            uri: `http://127.0.0.1:40000/ip_policy_rules/${id}`,
            createdAt: at,
          },
        ];
      }),
    );
    return { id: inputs.ipPolicyId, outs: { ipPolicyId: inputs.ipPolicyId, rules: kept(rules) } };
  },
  async read(id: string, props: any) {
    return { id, props, inputs: { ipPolicyId: props.ipPolicyId, rules: kept(declared(given(props.rules))) } };
  },
  async diff() {
    return { changes: false };
  },
  async delete() {},
};

// Each method as ours runs it: the operation, then afterOperation however it ended.
const provider: pulumi.dynamic.ResourceProvider = {
  check: (olds, news) => doNothing.check!(olds, news).finally(afterOperation),
  create: (inputs) => doNothing.create(inputs).finally(afterOperation),
  read: (id, props) => doNothing.read!(id, props).finally(afterOperation),
  diff: (id, olds, news) => doNothing.diff!(id, olds, news).finally(afterOperation),
  delete: (id, props) => doNothing.delete!(id, props).finally(afterOperation),
};

class FloorSet extends pulumi.dynamic.Resource {
  constructor(name: string, args: Record<string, unknown>) {
    super(provider, name, args, {}, "floor", "IpPolicyRuleSet");
  }
}

const config = new pulumi.Config();
new FloorSet("office-allowlist", {
  ipPolicyId: config.require("ipPolicyId"),
  rules: config.requireObject<string[]>("allow").map((cidr) => ({ cidr, action: "allow" })),
});
