import * as pulumi from "@pulumi/pulumi";
import type { IpPolicyRuleSetMember } from "../provider/ip-policy-rule-set";
import type { ResourceEntry } from "../provider/resources";

/** A value or an Output of it, for each element of a list too (`pulumi.Input<pulumi.Input<string>[]>`). */
type InputOf<T> = [T] extends [readonly (infer E)[]] ? pulumi.Input<InputOf<E>[]> : pulumi.Input<T>;

/**
 * A resource's arguments, made from its provider's input type: the same properties, required where
 * they are required, each a value or an Output, with the input type's doc comments (a mapped type
 * keeps them). So the SDK, the provider's table of fields and the docs cannot drift apart.
 */
export type ResourceArgs<Inputs> = { [K in keyof Inputs]: InputOf<NonNullable<Inputs[K]>> };

/**
 * Pulumi's ResourceProvider<Inputs, Outputs>, which each provider module satisfies (checked where the
 * SDK hands the module to Pulumi; erased at run time). Two corrections: what check hands on may be
 * another form of the inputs (`Checked`: an IpPolicyRuleSet's rules keyed by CIDR), which is what
 * diff, create and update then get; and what read returns as `inputs` are inputs, which
 * @pulumi/pulumi types as outputs.
 */
export type ProviderOf<Inputs, Outputs, Checked = Inputs> = {
  check?: (olds: Checked, news: Inputs) => Promise<pulumi.dynamic.CheckResult<Checked>>;
  diff?: (id: string, olds: Outputs, news: Checked) => Promise<pulumi.dynamic.DiffResult>;
  create: (inputs: Checked) => Promise<pulumi.dynamic.CreateResult<Outputs>>;
  read?: (
    id: string,
    props?: Outputs,
  ) => Promise<Omit<pulumi.dynamic.ReadResult<Outputs>, "inputs"> & { inputs?: unknown }>;
  update?: (id: string, olds: Outputs, news: Checked) => Promise<pulumi.dynamic.UpdateResult<Outputs>>;
  delete?: (id: string, props: Outputs) => Promise<void>;
};

/**
 * What a class of either host registers: every output of the registry's entry named (undefined),
 * so that Pulumi resolves each, for a lookup by id too; then the arguments.
 */
export function withOutputs(entry: ResourceEntry, args: object): Record<string, unknown> {
  return { ...Object.fromEntries(entry.outputs.map((k) => [k, undefined])), ...args };
}

/** The options the registry's entry adds to the program's: its secret outputs, its hidden diffs. */
export function entryOptions(
  entry: ResourceEntry,
  opts: pulumi.CustomResourceOptions | undefined,
  extra: pulumi.CustomResourceOptions = {},
): pulumi.CustomResourceOptions {
  return pulumi.mergeOptions(opts, {
    ...(entry.secretOutputs ? { additionalSecretOutputs: [...entry.secretOutputs] } : {}),
    ...(entry.hideDiffs ? { hideDiffs: [...entry.hideDiffs] } : {}),
    ...extra,
  });
}

/** A class that declares an Output for each output of its registry entry (the compiler names one it lacks). */
export type DeclaresOutputs<Entry extends { outputs: readonly string[] }> = {
  readonly [K in Entry["outputs"][number]]: pulumi.Output<unknown>;
};

type Rules = Record<string, IpPolicyRuleSetMember>;

/**
 * A set's rules as a preview shows them. Neither host previews a create or an update (the engine, or the
 * plugin, hands the checked inputs back as the outputs): rules without ids. A value made from them (a stack output of
 * a rule's id) would then differ from what up makes, and Pulumi's update plans (`pulumi preview
 * --save-plan`, `pulumi up --plan`) would fail that up after every write. Unknown instead, as a
 * provider says of what only the update can know; a set left as it is keeps its recorded rules.
 */
export function previewedRules(rules: pulumi.Output<Rules>): pulumi.Output<Rules> {
  const unknown = pulumi.output(pulumi.unknown) as unknown as pulumi.Output<Rules>;
  const previewed = (r: Rules) => Object.values(r ?? {}).some((m) => typeof m?.id !== "string");
  return rules.apply((r): pulumi.Output<Rules> => (previewed(r) ? unknown : (pulumi.output(r) as typeof rules)));
}
