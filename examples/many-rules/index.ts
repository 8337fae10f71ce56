// Rules built from a list of CIDRs: one allow rule per range, spread over the IP policies given.
// Config: `ipPolicyIds` (list of ipp_… ids); `cidrs` (list), or `count` to generate that many
// ranges in 10.0.0.0/8; `apiKeys` (a number of CI keys to add, default 0). The benchmarks use it.
import * as pulumi from "@pulumi/pulumi";
import * as accessctl from "@accessctl/pulumi";

const config = new pulumi.Config();
const ipPolicyIds = config.requireObject<string[]>("ipPolicyIds");
const count = config.getNumber("count") ?? 0;
const cidrs =
  config.getObject<string[]>("cidrs") ??
  Array.from({ length: count }, (_, i) => `10.${Math.floor(i / 256) % 256}.${i % 256}.0/24`);

export const ruleIds = cidrs.map(
  (cidr, i) =>
    new accessctl.IpPolicyRule(`allow-${cidr.replace(/[^0-9a-fA-F]+/g, "-")}`, {
      ipPolicyId: ipPolicyIds[i % ipPolicyIds.length],
      cidr,
      action: "allow",
      description: `generated rule ${i + 1} of ${cidrs.length}`,
    }).id,
);

export const keyIds = Array.from(
  { length: config.getNumber("apiKeys") ?? 0 },
  (_, i) => new accessctl.ApiKey(`ci-${i}`, { description: `CI key ${i + 1}` }).id,
);
