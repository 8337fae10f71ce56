import * as pulumi from "@pulumi/pulumi";
import * as provider from "../provider/ip-policy-rule-set";
import { ProviderOf, ResourceArgs } from "./args";
import { checkResource } from "./connection";
import { claimPolicy } from "./policy-owners";

/** The arguments of an IpPolicyRuleSet (see IpPolicyRuleSetInputs in provider/ip-policy-rule-set.ts). */
export type IpPolicyRuleSetArgs = ResourceArgs<provider.IpPolicyRuleSetInputs>;

/**
 * Every rule of one IP policy, as one resource: after creation it owns all of them. A rule added,
 * changed or deleted outside the program shows up at the next refresh and is put back by `up`.
 * Its id is the policy id.
 * @example
 * const allowlist = new accessctl.IpPolicyRuleSet("office-allowlist", {
 *   ipPolicyId: "ipp_…",
 *   rules: [{ cidr: "203.0.113.0/24", action: "allow", description: "HQ" }, { cidr: "2001:db8:1234::/48", action: "allow" }],
 * });
 */
export class IpPolicyRuleSet extends pulumi.dynamic.Resource {
  /** The IP policy id. */
  declare public readonly ipPolicyId: pulumi.Output<string>;
  /** Every rule of the policy as it stands ({id, cidr, action, description, metadata, uri, createdAt}), sorted by CIDR. */
  declare public readonly rules: pulumi.Output<provider.IpPolicyRuleSetMember[]>;
  /** Whether the set was declared with takeOver. */
  declare public readonly takeOver: pulumi.Output<boolean | undefined>;
  /** The account profile, if any. */
  declare public readonly profile: pulumi.Output<string | undefined>;

  /**
   * The rules of the existing policy `ipPolicyId`, read-only: read from the API, nothing is changed or deleted.
   * @example
   * const current = accessctl.IpPolicyRuleSet.get("current", "ipp_…");
   */
  public static get(name: string, ipPolicyId: pulumi.Input<string>, opts?: pulumi.CustomResourceOptions): IpPolicyRuleSet {
    return new IpPolicyRuleSet(name, {} as IpPolicyRuleSetArgs, { ...opts, id: ipPolicyId });
  }

  constructor(name: string, args: IpPolicyRuleSetArgs, opts?: pulumi.CustomResourceOptions) {
    checkResource("IpPolicyRuleSet", name, opts, "declare takeOver: true to make the policy's existing rules this resource's");
    if (!opts?.id) claimPolicy("IpPolicyRuleSet", name, args.ipPolicyId);
    // Every output named, so that a lookup by id (get) resolves them all.
    const outputs = { ipPolicyId: undefined, rules: undefined, takeOver: undefined, profile: undefined };
    super(provider satisfies ProviderOf<provider.IpPolicyRuleSetInputs, provider.IpPolicyRuleSetOutputs>, name, { ...outputs, ...args }, opts, "accessctl", "IpPolicyRuleSet");
  }
}
