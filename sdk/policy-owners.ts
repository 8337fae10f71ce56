// In the program process: which resources of this program manage rules of which IP policy. A set
// owns every rule of its policy, so a single-rule resource on that policy (or a second set) would
// be deleted by the set, or fight it, at every `up`: refused before anything is registered, where
// the policy id is a plain string (an Output is not known here; the README says what happens then).
import * as pulumi from "@pulumi/pulumi";
import { processState } from "../provider/state";

type Owners = Record<string, { sets: string[]; rules: string[] }>;

function owners(): Owners {
  return processState<Owners>("policy-owners", () => ({}));
}

/** Records that resource `name` (an IpPolicyRuleSet or an IpPolicyRule) manages rules of `ipPolicyId`; throws on a conflict with a set. */
export function claimPolicy(type: "IpPolicyRuleSet" | "IpPolicyRule", name: string, ipPolicyId: unknown): void {
  if (typeof ipPolicyId !== "string") return;
  const entry = (owners()[ipPolicyId] ??= { sets: [], rules: [] });
  const set = entry.sets[0];
  if (type === "IpPolicyRuleSet" && (set !== undefined || entry.rules.length)) {
    const other = set !== undefined ? `the IpPolicyRuleSet ${set}` : `the IpPolicyRule ${entry.rules[0]}`;
    throw new pulumi.RunError(`accessctl:IpPolicyRuleSet ${name}: ${other} also manages rules of IP policy ${ipPolicyId}; a set owns every rule of its policy, ` +
      `so ${set !== undefined ? "the two sets would delete each other's rules" : "the set would delete that rule at every up"}. Declare the rule in the set's rules instead, or use another policy`);
  }
  if (type === "IpPolicyRule" && set !== undefined) {
    throw new pulumi.RunError(`accessctl:IpPolicyRule ${name}: IP policy ${ipPolicyId} is owned by the IpPolicyRuleSet ${set}, which would delete this rule at every up; ` +
      "declare it in the set's rules instead, or use another policy");
  }
  (type === "IpPolicyRuleSet" ? entry.sets : entry.rules).push(name);
}
