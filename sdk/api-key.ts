import * as pulumi from "@pulumi/pulumi";
import * as provider from "../provider/api-key";
import * as operations from "../provider/bounded/api-key";
import { inOperation } from "../provider/operation";
import { PACKAGE, RESOURCES } from "../provider/resources";
import { DeclaresOutputs, entryOptions, ProviderOf, ResourceArgs, withOutputs } from "./args";
import { checkResource, programConfig } from "./connection";

/** The arguments of an ApiKey (see ApiKeyInputs in provider/api-key.ts). */
export type ApiKeyArgs = ResourceArgs<provider.ApiKeyInputs>;

/**
 * An API key of the account. Its `token` is known only to the run that creates it, and is a secret.
 * @example
 * const ci = new accessctl.ApiKey("ci", { description: "CI deploy key", metadata: '{"team":"infra"}' });
 * export const ciToken = ci.token; // a secret Output<string>
 */
export class ApiKey extends pulumi.dynamic.Resource implements DeclaresOutputs<typeof RESOURCES.ApiKey> {
  /** What uses the key ("" when unset). At most 255 bytes. */
  declare public readonly description: pulumi.Output<string>;
  /** User data ("" when unset). At most 4096 bytes. */
  declare public readonly metadata: pulumi.Output<string>;
  /** The owning User or Bot. */
  declare public readonly ownerId: pulumi.Output<string>;
  /** URI of the key on the API. */
  declare public readonly uri: pulumi.Output<string>;
  /** Creation time, RFC 3339. */
  declare public readonly createdAt: pulumi.Output<string>;
  /** The bearer token (secret). Set at creation only; undefined for an adopted key. */
  declare public readonly token: pulumi.Output<string | undefined>;
  /** The id given in `adoptId`, if the key was adopted. */
  declare public readonly adoptId: pulumi.Output<string | undefined>;
  /** The values given in `triggers`, whose change replaces the key. */
  declare public readonly triggers: pulumi.Output<unknown[] | undefined>;
  /** The account profile, if any. */
  declare public readonly profile: pulumi.Output<string | undefined>;

  /**
   * The existing key `id`, read-only: its state is read from the API, nothing is changed or deleted.
   * @example
   * const existing = accessctl.ApiKey.get("existing", "ak_…");
   */
  public static get(name: string, id: pulumi.Input<string>, opts?: pulumi.CustomResourceOptions): ApiKey {
    return new ApiKey(name, {}, { ...opts, id });
  }

  constructor(name: string, args: ApiKeyArgs = {}, opts: pulumi.CustomResourceOptions = {}) {
    checkResource("ApiKey", name, opts, `declare adoptId: ${JSON.stringify(opts.import)} to take the key over`);
    const entry = RESOURCES.ApiKey;
    // The provider marks what it creates with the resource's URN
    // (provider/ownership.ts), which a dynamic provider is not told.
    const __urn = pulumi.createUrn(name, entry.dynamicType, opts.parent);
    super(
      operations satisfies ProviderOf<provider.ApiKeyInputs, provider.ApiKeyOutputs>,
      name,
      { ...withOutputs(entry, args), __urn },
      entryOptions(entry, opts),
      PACKAGE,
      entry.name,
    );
  }
}

export type { ApiKeyInfo } from "../provider/api-key";
type ApiKeyInfo = provider.ApiKeyInfo;

/** listApiKeys as an Output, for programs that do not await (Pulumi's getXOutput convention). */
export function listApiKeysOutput(): pulumi.Output<ApiKeyInfo[]> {
  return pulumi.output(listApiKeys());
}

/**
 * Every API key of the account, all pages. Uses the `accessctl:` stack config, else ACCESSCTL_* env.
 * @example
 * export const keyCount = accessctl.listApiKeysOutput().apply((keys) => keys.length);
 */
export async function listApiKeys(): Promise<ApiKeyInfo[]> {
  return inOperation(() => provider.listApiKeys(programConfig()));
}
