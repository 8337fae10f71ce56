// The one registry of the package's resources and functions: each resource's name, type token,
// provider module, outputs and example, and each function's. Everything else follows from it:
//   - the plugin (plugin/server.ts): which module serves each type token and function;
//   - the classes of both hosts (sdk/): type names, the outputs each resolves, aliases, options;
//   - the schema (scripts/schema.js): which resources and functions there are (their inputs,
//     outputs and docs come from the modules' interfaces), hideDiffs, a function's result;
//   - the reference (scripts/docs.js): the examples.
// Importing this file loads no provider code (the plugin SDK, sdk/plugin.ts, stays light): a
// module is loaded when its entry's `load` is first called. Plain data and functions, nothing that
// Pulumi's closure serializer could trip over (the dynamic classes import it; no provider module does).
/* eslint-disable @typescript-eslint/no-require-imports -- `load`: a module is loaded on first use (see above) */
import type * as apiKey from "./api-key";
import type * as ipPolicyRule from "./ip-policy-rule";
import type * as ipPolicyRuleSet from "./ip-policy-rule-set";
import type * as mtls from "./tls-edge-mutual-tls";
import type { ProviderModule, Props } from "./module";

export const PACKAGE = "accessctl";
export const MODULE = "index";

/** The provider modules, each loaded on first use (require caches it). */
const modules = {
  apiKey: (): typeof apiKey => require("./api-key"),
  ipPolicyRule: (): typeof ipPolicyRule => require("./ip-policy-rule"),
  ipPolicyRuleSet: (): typeof ipPolicyRuleSet => require("./ip-policy-rule-set"),
  mtls: (): typeof mtls => require("./tls-edge-mutual-tls"),
};

/** A resource's example in the reference: inputs as a program gives them, and what it exports (an output, or `id`). */
export interface ResourceExample {
  /** The resource's name in the program. */
  name: string;
  inputs: Props;
  /** Stack output name → the resource's output it exports. */
  exports: Record<string, string>;
  /** An id to look an existing object up by. */
  get: string;
}

export interface ResourceEntry {
  /** The class name in every SDK. */
  name: string;
  /** The plugin's type token, `accessctl:index:<name>`. */
  token: string;
  /**
   * The type of the dynamic resource of this name
   * (`pulumi-nodejs:dynamic/accessctl:<name>`): the plugin's classes alias it.
   */
  dynamicType: string;
  /** The provider module. */
  load(): ProviderModule<Props, Props>;
  /** Every output, named once (the classes name each so that Pulumi resolves it, for a lookup by id too). */
  outputs: readonly string[];
  /** Outputs that are secrets whatever the inputs (Pulumi's additionalSecretOutputs); the schema marks them secret. */
  secretOutputs?: readonly string[];
  /**
   * Properties whose diff Pulumi would print whole, every element:
   * the provider shows their changes itself (the hideDiffs option).
   */
  hideDiffs?: readonly string[];
  example: ResourceExample;
}

export interface FunctionEntry {
  name: string;
  token: string;
  /** The provider module that implements the function (exports it under `name`). */
  load(): object;
  /** The function, as the plugin calls it (with the provider's connection). */
  invoke(args: Props): Promise<unknown>;
  /** The property the function's result holds its list under, so that every SDK types the result. */
  result: string;
  example: { name: string; args: Props };
}

/** The names of T's outputs (Pulumi's own `__…` keys aside). */
type OutputName<T> = Exclude<keyof T & string, `__${string}`>;

/** Every output of T, each once: one left out is a compile error naming it (`missing`). */
function outputsOf<T>() {
  return <const K extends readonly OutputName<T>[]>(
    names: K,
    ..._all: [Exclude<OutputName<T>, K[number]>] extends [never] ? [] : [missing: Exclude<OutputName<T>, K[number]>]
  ) => names;
}

/** An example typed by the resource's inputs and outputs. */
const example = <Inputs, Outputs>(e: {
  name: string;
  inputs: Partial<Inputs>;
  exports: Record<string, OutputName<Outputs> | "id">;
  get: string;
}): ResourceExample => e;

function resource<const Name extends string, const Entry extends Omit<ResourceEntry, "name" | "token" | "dynamicType">>(
  name: Name,
  entry: Entry,
) {
  return {
    name,
    token: `${PACKAGE}:${MODULE}:${name}` as const,
    dynamicType: `pulumi-nodejs:dynamic/${PACKAGE}:${name}` as const,
    ...entry,
  };
}

function fn<const Name extends string>(name: Name, entry: Omit<FunctionEntry, "name" | "token">) {
  return { name, token: `${PACKAGE}:${MODULE}:${name}` as const, ...entry };
}

export const RESOURCES = {
  ApiKey: resource("ApiKey", {
    load: (): ProviderModule<apiKey.ApiKeyInputs, apiKey.ApiKeyOutputs> => modules.apiKey(),
    outputs: outputsOf<apiKey.ApiKeyOutputs>()([
      "description",
      "metadata",
      "ownerId",
      "uri",
      "createdAt",
      "token",
      "adoptId",
      "triggers",
      "profile",
    ]),
    secretOutputs: ["token"],
    example: example<apiKey.ApiKeyInputs, apiKey.ApiKeyOutputs>({
      name: "ci",
      inputs: { description: "CI deploy key", metadata: '{"team":"infra"}', triggers: ["2026-11"] },
      exports: { ciToken: "token" },
      get: "ak_…",
    }),
  }),
  IpPolicyRule: resource("IpPolicyRule", {
    load: (): ProviderModule<ipPolicyRule.IpPolicyRuleInputs, ipPolicyRule.IpPolicyRuleOutputs> =>
      modules.ipPolicyRule(),
    outputs: outputsOf<ipPolicyRule.IpPolicyRuleOutputs>()([
      "ipPolicyId",
      "ipPolicy",
      "cidr",
      "action",
      "description",
      "metadata",
      "uri",
      "createdAt",
      "adoptId",
      "profile",
    ]),
    example: example<ipPolicyRule.IpPolicyRuleInputs, ipPolicyRule.IpPolicyRuleOutputs>({
      name: "office",
      inputs: { ipPolicyId: "ipp_…", cidr: "203.0.113.0/24", action: "allow", description: "HQ" },
      exports: { officeRuleId: "id" },
      get: "ipr_…",
    }),
  }),
  IpPolicyRuleSet: resource("IpPolicyRuleSet", {
    load: (): ProviderModule<
      ipPolicyRuleSet.IpPolicyRuleSetInputs,
      ipPolicyRuleSet.IpPolicyRuleSetOutputs,
      ipPolicyRuleSet.CheckedRuleSetInputs
    > => modules.ipPolicyRuleSet(),
    outputs: outputsOf<ipPolicyRuleSet.IpPolicyRuleSetOutputs>()(["ipPolicyId", "rules", "takeOver", "profile"]),
    // Pulumi's diff of a map prints every entry, changed or not (300 lines for one rule added by
    // hand): the provider's plan, shown under the resource, names each changed rule instead.
    hideDiffs: ["rules"],
    example: example<ipPolicyRuleSet.IpPolicyRuleSetInputs, ipPolicyRuleSet.IpPolicyRuleSetOutputs>({
      name: "office-allowlist",
      inputs: {
        ipPolicyId: "ipp_…",
        rules: [
          { cidr: "203.0.113.0/24", action: "allow", description: "HQ" },
          { cidr: "2001:db8:1234::/48", action: "allow" },
        ],
      },
      exports: { allowlist: "rules" },
      get: "ipp_…",
    }),
  }),
  TlsEdgeMutualTls: resource("TlsEdgeMutualTls", {
    load: (): ProviderModule<mtls.TlsEdgeMutualTlsInputs, mtls.TlsEdgeMutualTlsOutputs> => modules.mtls(),
    outputs: outputsOf<mtls.TlsEdgeMutualTlsOutputs>()([
      "edgeId",
      "enabled",
      "certificateAuthorityIds",
      "certificateAuthorities",
      "profile",
    ]),
    example: example<mtls.TlsEdgeMutualTlsInputs, mtls.TlsEdgeMutualTlsOutputs>({
      name: "edge",
      inputs: { edgeId: "edgtls_…", certificateAuthorityIds: ["ca_…"], enabled: true },
      exports: { authorities: "certificateAuthorities" },
      get: "edgtls_…",
    }),
  }),
} satisfies Record<string, ResourceEntry>;

export const FUNCTIONS = {
  listIpPolicyRules: fn("listIpPolicyRules", {
    load: modules.ipPolicyRule,
    invoke: (filter: ipPolicyRule.IpPolicyRuleFilter) => modules.ipPolicyRule().listIpPolicyRules(filter),
    result: "rules",
    example: { name: "officeRules", args: { ipPolicyId: "ipp_…" } satisfies ipPolicyRule.IpPolicyRuleFilter },
  }),
  listApiKeys: fn("listApiKeys", {
    load: modules.apiKey,
    invoke: () => modules.apiKey().listApiKeys(),
    result: "keys",
    example: { name: "apiKeys", args: {} },
  }),
} satisfies Record<string, FunctionEntry>;
