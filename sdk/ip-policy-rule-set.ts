import * as pulumi from "@pulumi/pulumi";
import * as provider from "../provider/ip-policy-rule-set";
import * as operations from "../provider/bounded/ip-policy-rule-set";
import { PACKAGE, RESOURCES } from "../provider/resources";
import { DeclaresOutputs, entryOptions, previewedRules, ProviderOf, ResourceArgs, withOutputs } from "./args";
import { checkResource, checkRulesIgnored } from "./connection";

/** The arguments of an IpPolicyRuleSet (see IpPolicyRuleSetInputs in provider/ip-policy-rule-set.ts). */
export type IpPolicyRuleSetArgs = ResourceArgs<provider.IpPolicyRuleSetInputs>;

/**
 * Every rule of one IP policy, as one resource: after creation it owns all of them. A rule added,
 * changed or deleted outside the program shows up at the next refresh and is put back by `up`.
 * Its id is the policy id.
 * @example
 * const allowlist = new accessctl.IpPolicyRuleSet("office-allowlist", {
 *   ipPolicyId: "ipp_…",
 *   rules: [{ cidr: "203.0.113.0/24", action: "allow", description:
 *   "HQ" }, { cidr: "2001:db8:1234::/48", action: "allow" }],
 * });
 */
export class IpPolicyRuleSet
  extends pulumi.dynamic.Resource
  implements DeclaresOutputs<typeof RESOURCES.IpPolicyRuleSet>
{
  /** The IP policy id. */
  declare public readonly ipPolicyId: pulumi.Output<string>;
  /**
   * Every rule of the policy as it stands, keyed by canonical
   * CIDR (`"10.0.0.0/8"`, `"2001:db8::/32"`, `"198.51.100.7/32"`).
   */
  declare public readonly rules: pulumi.Output<Record<string, provider.IpPolicyRuleSetMember>>;
  /** Whether the set was declared with takeOver. */
  declare public readonly takeOver: pulumi.Output<boolean | undefined>;
  /** The account profile, if any. */
  declare public readonly profile: pulumi.Output<string | undefined>;

  /**
   * The rules of the existing policy `ipPolicyId`, read-only: read from the API, nothing is changed or deleted.
   * @example
   * const current = accessctl.IpPolicyRuleSet.get("current", "ipp_…");
   */
  public static get(
    name: string,
    ipPolicyId: pulumi.Input<string>,
    opts?: pulumi.CustomResourceOptions,
  ): IpPolicyRuleSet {
    return new IpPolicyRuleSet(name, {} as IpPolicyRuleSetArgs, { ...opts, id: ipPolicyId });
  }

  constructor(name: string, args: IpPolicyRuleSetArgs, opts?: pulumi.CustomResourceOptions) {
    checkResource(
      "IpPolicyRuleSet",
      name,
      opts,
      "declare takeOver: true to make the policy's existing rules this resource's",
    );
    checkRulesIgnored(name, opts);
    const entry = RESOURCES.IpPolicyRuleSet;
    // The provider shows its plan and progress under this resource:
    // it needs the URN, which a dynamic provider is not told.
    const __urn = pulumi.createUrn(name, entry.dynamicType, opts?.parent);
    // Which inputs the program made secret: a dynamic provider gets their values only, and its plan must not show them.
    const __secrets = Promise.all(
      Object.entries(args).map(async ([key, value]) => ((await pulumi.isSecret(pulumi.output(value))) ? key : "")),
    ).then((keys) => keys.filter(Boolean));
    // The entry's options: hideDiffs ["rules"] (Pulumi's diff of a map prints every entry, changed or
    // not: 300 lines for one rule added by hand; the provider's
    // plan, shown under the resource, names each changed rule).
    super(
      operations satisfies ProviderOf<
        provider.IpPolicyRuleSetInputs,
        provider.IpPolicyRuleSetOutputs,
        provider.CheckedRuleSetInputs
      >,
      name,
      { ...withOutputs(entry, args), __urn, __secrets },
      entryOptions(entry, opts),
      PACKAGE,
      entry.name,
    );
    if (pulumi.runtime.isDryRun()) (this as { rules: unknown }).rules = previewedRules(this.rules);
  }
}
