// The baseline of the benchmarks: the smallest dynamic provider for the same resources and the
// same program as examples/many-rules, written in TypeScript like that example, so that both
// programs pay the language host's type check of a TypeScript program (about 4 s on these
// machines) and the comparison shows what the providers cost. One HTTP call per operation; no
// validation, no retries, no rate limiter. Credentials from the environment at call time.
import * as pulumi from "@pulumi/pulumi";

function provider(path: string): pulumi.dynamic.ResourceProvider {
  const call = async (method: string, url: string, body?: unknown) => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- required inside: Pulumi serializes this function
    const { request } = require("undici");
    const res = await request(process.env.ACCESSCTL_API_URL + url, {
      method,
      headers: {
        authorization: `Bearer ${process.env.ACCESSCTL_API_KEY}`,
        "service-version": "2",
        "content-type": "application/json",
      },
      body: body && JSON.stringify(body),
    });
    const text = await res.body.text();
    if (res.statusCode >= 300 && res.statusCode !== 404) throw new Error(`HTTP ${res.statusCode}: ${text}`);
    return res.statusCode === 404 ? undefined : text && JSON.parse(text);
  };
  return {
    async create({ __provider, ...inputs }: any) {
      const out = await call("POST", path, inputs);
      return { id: out.id, outs: out };
    },
    async read(id: string) {
      const out = await call("GET", `${path}/${id}`);
      return out ? { id, props: out } : {};
    },
    async delete(id: string) {
      await call("DELETE", `${path}/${id}`);
    },
  };
}

const ruleProvider = provider("/ip_policy_rules");
const keyProvider = provider("/api_keys");
// pulumi.dynamic.Resource is abstract in its TypeScript types: one small class per resource type.
class Rule extends pulumi.dynamic.Resource {
  constructor(name: string, args: Record<string, unknown>) {
    super(ruleProvider, name, args, {}, "baseline", "Rule");
  }
}
class Key extends pulumi.dynamic.Resource {
  constructor(name: string, args: Record<string, unknown>) {
    super(keyProvider, name, args, {}, "baseline", "Key");
  }
}
const config = new pulumi.Config();
const ipPolicyIds = config.requireObject<string[]>("ipPolicyIds");
const count = config.getNumber("count") ?? 0;

export const ruleIds = Array.from({ length: count }, (_, i) => {
  const cidr = `10.${Math.floor(i / 256) % 256}.${i % 256}.0/24`;
  const args = {
    ip_policy_id: ipPolicyIds[i % ipPolicyIds.length],
    cidr,
    action: "allow",
    description: `generated rule ${i + 1} of ${count}`,
  };
  return new Rule(`allow-${cidr.replace(/[^0-9a-fA-F]+/g, "-")}`, args).id;
});
export const keyIds = Array.from(
  { length: config.getNumber("apiKeys") ?? 0 },
  (_, i) => new Key(`ci-${i}`, { description: `CI key ${i + 1}` }).id,
);
