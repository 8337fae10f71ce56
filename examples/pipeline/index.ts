// The IP allow and deny lists of one policy, as a platform team keeps them in a repository and a
// pipeline deploys them (.github/workflows/access-policy.yml): `pulumi up` on the main branch, and
// a scheduled `pulumi preview --refresh --expect-no-changes` that fails when someone changed the
// rules by hand.
import * as pulumi from "@pulumi/pulumi";
import * as accessctl from "@accessctl/pulumi";

const config = new pulumi.Config();
const ipPolicyId = config.require("ipPolicyId");
const allow = config.requireObject<string[]>("allow");
const deny = config.getObject<string[]>("deny") ?? [];

function rules(action: "allow" | "deny", cidrs: string[]) {
  return cidrs.map(
    (cidr) =>
      new accessctl.IpPolicyRule(`${action}-${cidr.replace(/[^0-9a-fA-F]+/g, "-")}`, {
        ipPolicyId,
        cidr,
        action,
        description: `${action} list, managed by the access-policy pipeline`,
      }),
  );
}

export const allowRuleIds = rules("allow", allow).map((r) => r.id);
export const denyRuleIds = rules("deny", deny).map((r) => r.id);
