import * as pulumi from "@pulumi/pulumi";
import * as provider from "../provider/ip-policy-rule";
import { RuleAction } from "../contract/ip-policy-rule";
import { Reference } from "../provider/fields";
import * as operations from "../provider/bounded/ip-policy-rule";
import { inOperation } from "../provider/operation";
import { PACKAGE, RESOURCES } from "../provider/resources";
import { DeclaresOutputs, entryOptions, ProviderOf, ResourceArgs, withOutputs } from "./args";
import { checkResource, programConfig } from "./connection";

/** The arguments of an IpPolicyRule (see IpPolicyRuleInputs in provider/ip-policy-rule.ts). */
export type IpPolicyRuleArgs = ResourceArgs<provider.IpPolicyRuleInputs>;

/**
 * An allow or deny rule for a CIDR block in an IP policy.
 * @example
 * const office = new accessctl.IpPolicyRule("office", { ipPolicyId:
 * "ipp_…", cidr: "203.0.113.0/24", action: "allow", description: "HQ" });
 */
export class IpPolicyRule extends pulumi.dynamic.Resource implements DeclaresOutputs<typeof RESOURCES.IpPolicyRule> {
  /** The IP policy id. */
  declare public readonly ipPolicyId: pulumi.Output<string>;
  /** The IP policy as a reference. */
  declare public readonly ipPolicy: pulumi.Output<Reference>;
  /** The range, in the service's canonical form. */
  declare public readonly cidr: pulumi.Output<string>;
  /** `allow` or `deny`. */
  declare public readonly action: pulumi.Output<RuleAction>;
  /** Description ("" when unset). At most 255 bytes. */
  declare public readonly description: pulumi.Output<string>;
  /** User data ("" when unset). At most 4096 bytes. */
  declare public readonly metadata: pulumi.Output<string>;
  /** URI of the rule on the API. */
  declare public readonly uri: pulumi.Output<string>;
  /** Creation time, RFC 3339. */
  declare public readonly createdAt: pulumi.Output<string>;
  /** The id given in `adoptId`, if the rule was adopted. */
  declare public readonly adoptId: pulumi.Output<string | undefined>;
  /** The account profile, if any. */
  declare public readonly profile: pulumi.Output<string | undefined>;

  /**
   * The existing rule `id`, read-only: its state is read from the API, nothing is changed or deleted.
   * @example
   * const existing = accessctl.IpPolicyRule.get("existing", "ipr_…");
   */
  public static get(name: string, id: pulumi.Input<string>, opts?: pulumi.CustomResourceOptions): IpPolicyRule {
    return new IpPolicyRule(name, {} as IpPolicyRuleArgs, { ...opts, id });
  }

  constructor(name: string, args: IpPolicyRuleArgs, opts?: pulumi.CustomResourceOptions) {
    checkResource(
      "IpPolicyRule",
      name,
      opts,
      `declare adoptId: ${JSON.stringify(opts?.import)} (with the rule's policy and action) to take the rule over`,
    );
    const entry = RESOURCES.IpPolicyRule;
    // The provider marks what it creates with the resource's URN
    // (provider/ownership.ts), which a dynamic provider is not told.
    const __urn = pulumi.createUrn(name, entry.dynamicType, opts?.parent);
    super(
      operations satisfies ProviderOf<provider.IpPolicyRuleInputs, provider.IpPolicyRuleOutputs>,
      name,
      { ...withOutputs(entry, args), __urn },
      entryOptions(entry, opts),
      PACKAGE,
      entry.name,
    );
  }
}

export type { IpPolicyRuleInfo } from "../provider/ip-policy-rule";
type IpPolicyRuleInfo = provider.IpPolicyRuleInfo;

/** listIpPolicyRules as an Output, for programs that do not await (Pulumi's getXOutput convention). */
export function listIpPolicyRulesOutput(
  filter: { ipPolicyId?: pulumi.Input<string> } = {},
): pulumi.Output<IpPolicyRuleInfo[]> {
  return pulumi.output(filter.ipPolicyId).apply((ipPolicyId) => listIpPolicyRules({ ipPolicyId }));
}

/**
 * Every rule of the account, or of one policy, all pages. Uses the `accessctl:` stack config, else ACCESSCTL_* env.
 * @example
 * export const ruleCount = accessctl.listIpPolicyRulesOutput({ ipPolicyId: "ipp_…" }).apply((rules) => rules.length);
 */
export async function listIpPolicyRules(filter: provider.IpPolicyRuleFilter = {}): Promise<IpPolicyRuleInfo[]> {
  return inOperation(() => provider.listIpPolicyRules(filter, programConfig()));
}
