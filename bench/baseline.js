// The baseline of the benchmarks: the smallest dynamic provider for the same resources and the
// same program as examples/many-rules. One HTTP call per operation; no validation, no retries,
// no rate limiter. Credentials from the environment at call time.
"use strict";
const pulumi = require("@pulumi/pulumi");

function provider(path) {
  const call = async (method, url, body) => {
    const { request } = require("undici");
    const res = await request(process.env.ACCESSCTL_API_URL + url, {
      method,
      headers: { authorization: `Bearer ${process.env.ACCESSCTL_API_KEY}`, "service-version": "2", "content-type": "application/json" },
      body: body && JSON.stringify(body),
    });
    const text = await res.body.text();
    if (res.statusCode >= 300 && res.statusCode !== 404) throw new Error(`HTTP ${res.statusCode}: ${text}`);
    return res.statusCode === 404 ? undefined : text && JSON.parse(text);
  };
  return {
    async create({ __provider, ...inputs }) {
      const out = await call("POST", path, inputs);
      return { id: out.id, outs: out };
    },
    async read(id) {
      const out = await call("GET", `${path}/${id}`);
      return out ? { id, props: out } : {};
    },
    async delete(id) {
      await call("DELETE", `${path}/${id}`);
    },
  };
}

const ruleProvider = provider("/ip_policy_rules");
const keyProvider = provider("/api_keys");
const config = new pulumi.Config();
const ipPolicyIds = config.requireObject("ipPolicyIds");
const count = config.getNumber("count") || 0;

exports.ruleIds = Array.from({ length: count }, (_, i) => {
  const cidr = `10.${Math.floor(i / 256) % 256}.${i % 256}.0/24`;
  const args = { ip_policy_id: ipPolicyIds[i % ipPolicyIds.length], cidr, action: "allow", description: `generated rule ${i + 1} of ${count}` };
  return new pulumi.dynamic.Resource(ruleProvider, `allow-${cidr.replace(/[^0-9a-fA-F]+/g, "-")}`, args, {}, "baseline", "Rule").id;
});
exports.keyIds = Array.from({ length: config.getNumber("apiKeys") || 0 }, (_, i) =>
  new pulumi.dynamic.Resource(keyProvider, `ci-${i}`, { description: `CI key ${i + 1}` }, {}, "baseline", "Key").id);
