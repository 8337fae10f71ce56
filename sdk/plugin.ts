// `@accessctl/pulumi/plugin`: the same four classes and list helpers as `@accessctl/pulumi`, backed by
// the plugin pulumi-resource-accessctl instead of Pulumi's dynamic-provider host. Same arguments and
// outputs (both are made from the provider modules' types). Each class carries an alias to the
// dynamic resource type of its name, so a stack deployed with the dynamic classes moves here by its
// import line alone: nothing is replaced or written. The plugin must be installed:
//   pulumi plugin install resource accessctl <version> --file
//   node_modules/@accessctl/pulumi/dist/pulumi-resource-accessctl-v<version>-linux-amd64.tar.gz
import * as pulumi from "@pulumi/pulumi";
import type * as apiKey from "../provider/api-key";
import type * as rule from "../provider/ip-policy-rule";
import type * as ruleSet from "../provider/ip-policy-rule-set";
import type * as mtls from "../provider/tls-edge-mutual-tls";
import { FUNCTIONS, RESOURCES, ResourceEntry } from "../provider/resources";
import { entryOptions, previewedRules, ResourceArgs, withOutputs } from "./args";
import { checkRulesIgnored } from "./connection";

// the plugin of this package's version
// eslint-disable-next-line @typescript-eslint/no-require-imports -- read at run time from dist/ (tsc copies no JSON up)
const { version: VERSION } = require("../../package.json") as { version: string };

/** A resource's outputs as the class shows them: each an Output of the provider module's output type. */
type Outputs<T> = { readonly [K in keyof T]-?: pulumi.Output<T[K]> };

// Each class's outputs are typed by the interface of its name (merged into it), from its provider module's output
// type: Pulumi makes them on the instance (withOutputs names them as properties); no field of the class declares them.
/* eslint-disable @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type */

/**
 * Our plugin, at this package's version, the alias that carries a
 * dynamic resource of this name over, and the entry's own options.
 */
function options(entry: ResourceEntry, opts: pulumi.CustomResourceOptions | undefined): pulumi.CustomResourceOptions {
  return entryOptions(entry, opts, { version: VERSION, aliases: [{ type: entry.dynamicType }] });
}

/** An API key of the account. Its `token` is known only to the run that creates it, and is a secret. */
export class ApiKey extends pulumi.CustomResource {
  /** The existing key `id`, read-only: read from the API, never changed or deleted. */
  public static get(name: string, id: pulumi.Input<string>, opts?: pulumi.CustomResourceOptions): ApiKey {
    return new ApiKey(name, {}, { ...opts, id });
  }

  constructor(name: string, args: ResourceArgs<apiKey.ApiKeyInputs> = {}, opts?: pulumi.CustomResourceOptions) {
    super(RESOURCES.ApiKey.token, name, withOutputs(RESOURCES.ApiKey, args), options(RESOURCES.ApiKey, opts));
  }
}
export interface ApiKey extends Outputs<apiKey.ApiKeyOutputs> {}

/** An allow or deny rule for a CIDR block in an IP policy. */
export class IpPolicyRule extends pulumi.CustomResource {
  /** The existing rule `id`, read-only: read from the API, never changed or deleted. */
  public static get(name: string, id: pulumi.Input<string>, opts?: pulumi.CustomResourceOptions): IpPolicyRule {
    return new IpPolicyRule(name, {} as ResourceArgs<rule.IpPolicyRuleInputs>, { ...opts, id });
  }

  constructor(name: string, args: ResourceArgs<rule.IpPolicyRuleInputs>, opts?: pulumi.CustomResourceOptions) {
    super(
      RESOURCES.IpPolicyRule.token,
      name,
      withOutputs(RESOURCES.IpPolicyRule, args),
      options(RESOURCES.IpPolicyRule, opts),
    );
  }
}
export interface IpPolicyRule extends Outputs<rule.IpPolicyRuleOutputs> {}

/** Every rule of one IP policy, as one resource: after creation it owns all of them. Its id is the policy id. */
export class IpPolicyRuleSet extends pulumi.CustomResource {
  /** The rules of the existing policy `ipPolicyId`, read-only: read from the API, never changed or deleted. */
  public static get(
    name: string,
    ipPolicyId: pulumi.Input<string>,
    opts?: pulumi.CustomResourceOptions,
  ): IpPolicyRuleSet {
    return new IpPolicyRuleSet(name, {} as ResourceArgs<ruleSet.IpPolicyRuleSetInputs>, { ...opts, id: ipPolicyId });
  }

  constructor(name: string, args: ResourceArgs<ruleSet.IpPolicyRuleSetInputs>, opts?: pulumi.CustomResourceOptions) {
    checkRulesIgnored(name, opts);
    // hideDiffs (the registry's): Pulumi's diff of a map prints every entry, changed or not; the provider's plan, shown
    // under the resource, names each changed rule.
    super(
      RESOURCES.IpPolicyRuleSet.token,
      name,
      withOutputs(RESOURCES.IpPolicyRuleSet, args),
      options(RESOURCES.IpPolicyRuleSet, opts),
    );
    if (pulumi.runtime.isDryRun()) (this as { rules: unknown }).rules = previewedRules(this.rules);
  }
}
export interface IpPolicyRuleSet extends Outputs<Omit<ruleSet.IpPolicyRuleSetOutputs, "__urn">> {}

/** The mutual TLS module of a TLS edge; its id is the edge id. Creating it takes over the edge's module. */
export class TlsEdgeMutualTls extends pulumi.CustomResource {
  /** The module of the existing edge `edgeId`, read-only: read from the API, never changed or deleted. */
  public static get(name: string, edgeId: pulumi.Input<string>, opts?: pulumi.CustomResourceOptions): TlsEdgeMutualTls {
    return new TlsEdgeMutualTls(name, {} as ResourceArgs<mtls.TlsEdgeMutualTlsInputs>, { ...opts, id: edgeId });
  }

  constructor(name: string, args: ResourceArgs<mtls.TlsEdgeMutualTlsInputs>, opts?: pulumi.CustomResourceOptions) {
    super(
      RESOURCES.TlsEdgeMutualTls.token,
      name,
      withOutputs(RESOURCES.TlsEdgeMutualTls, args),
      options(RESOURCES.TlsEdgeMutualTls, opts),
    );
  }
}
export interface TlsEdgeMutualTls extends Outputs<mtls.TlsEdgeMutualTlsOutputs> {}
/* eslint-enable @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type */

/** Every rule of the account, or of one policy (the plugin's function accessctl:index:listIpPolicyRules). */
export async function listIpPolicyRules(filter: rule.IpPolicyRuleFilter = {}): Promise<rule.IpPolicyRuleInfo[]> {
  // The result holds the list under one property (the registry's `result`).
  return (await pulumi.runtime.invoke(FUNCTIONS.listIpPolicyRules.token, filter, { version: VERSION }))[
    FUNCTIONS.listIpPolicyRules.result
  ];
}

/** listIpPolicyRules as an Output. */
export function listIpPolicyRulesOutput(
  filter: { ipPolicyId?: pulumi.Input<string> } = {},
): pulumi.Output<rule.IpPolicyRuleInfo[]> {
  return pulumi
    .output(filter.ipPolicyId)
    .apply((ipPolicyId) => listIpPolicyRules(ipPolicyId === undefined ? {} : { ipPolicyId }));
}

/** Every API key of the account (the plugin's function accessctl:index:listApiKeys). */
export async function listApiKeys(): Promise<apiKey.ApiKeyInfo[]> {
  return (await pulumi.runtime.invoke(FUNCTIONS.listApiKeys.token, {}, { version: VERSION }))[
    FUNCTIONS.listApiKeys.result
  ];
}

/** listApiKeys as an Output. */
export function listApiKeysOutput(): pulumi.Output<apiKey.ApiKeyInfo[]> {
  return pulumi.output(listApiKeys());
}

export type { ApiKeyInfo } from "../provider/api-key";
export type { IpPolicyRuleInfo } from "../provider/ip-policy-rule";
export type { IpPolicyRuleSetMember, IpPolicyRuleSetRule } from "../provider/ip-policy-rule-set";
