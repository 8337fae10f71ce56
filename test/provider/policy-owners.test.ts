// The program-side registry that refuses, before anything is registered, a set and a rule (or two
// sets) on one IP policy id known as a plain string.
import { describe, expect, it } from "vitest";
import { compiled } from "../helpers/provider";

const { claimPolicy } = compiled("sdk/policy-owners.js");

describe("policy owners", () => {
  it("refuses a rule on a set's policy, a set on a policy with a rule, and a second set; names both resources", () => {
    claimPolicy("IpPolicyRuleSet", "office", "ipp_owners1");
    expect(() => claimPolicy("IpPolicyRule", "stray", "ipp_owners1")).toThrow(/accessctl:IpPolicyRule stray: IP policy ipp_owners1 is owned by the IpPolicyRuleSet office/);
    expect(() => claimPolicy("IpPolicyRuleSet", "second", "ipp_owners1")).toThrow(/accessctl:IpPolicyRuleSet second: the IpPolicyRuleSet office also manages rules of IP policy ipp_owners1/);
    claimPolicy("IpPolicyRule", "a", "ipp_owners2");
    claimPolicy("IpPolicyRule", "b", "ipp_owners2"); // rules alone may share a policy
    expect(() => claimPolicy("IpPolicyRuleSet", "late", "ipp_owners2")).toThrow(/the IpPolicyRule a also manages rules of IP policy ipp_owners2/);
  });

  it("lets an id that is not known yet (an Output) through", () => {
    claimPolicy("IpPolicyRuleSet", "s", { apply: () => undefined });
    expect(() => claimPolicy("IpPolicyRule", "r", { apply: () => undefined })).not.toThrow();
  });
});
