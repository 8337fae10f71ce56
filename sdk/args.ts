import * as pulumi from "@pulumi/pulumi";

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
  read?: (id: string, props?: Outputs) => Promise<Omit<pulumi.dynamic.ReadResult<Outputs>, "inputs"> & { inputs?: unknown }>;
  update?: (id: string, olds: Outputs, news: Checked) => Promise<pulumi.dynamic.UpdateResult<Outputs>>;
  delete?: (id: string, props: Outputs) => Promise<void>;
};
