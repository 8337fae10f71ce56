// What every provider module offers, whichever host serves it: the dynamic-provider host (sdk/)
// hands the module to Pulumi as it is, the plugin (plugin/server.ts) calls the same functions. The
// registry (provider/resources.ts) checks each module against its own instance of this interface;
// the plugin, which speaks untyped property maps, sees them all as ProviderModule<Props, Props>.
// Types only: nothing here exists at run time.
import type { DiffKind } from "./fields";
import type { CheckFailure } from "./validate";

/** Property values as they come over the wire. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any module's inputs or outputs; fields check them
export type Props = Record<string, any>;

export interface DiffResult {
  changes: boolean;
  /** The inputs whose change replaces the object. */
  replaces: string[];
  deleteBeforeReplace?: boolean;
  /**
   * Each changed property path and what happens to it (the plugin's DetailedDiff). Without it the
   * plugin says which top-level properties changed (`diffs`) and Pulumi diffs them itself.
   */
  detailedDiff?: Record<string, DiffKind>;
  /** The top-level properties that changed, where there is no detailedDiff. */
  diffs?: string[];
}

/**
 * A provider module: `Inputs` as a program declares them, `Outputs` as the state keeps them, and
 * `Checked` the inputs as check hands them on (what diff, create and update get; an
 * IpPolicyRuleSet's rules keyed by CIDR). Method signatures, so that a module of particular types
 * is also a ProviderModule<Props, Props> (parameters are compared both ways).
 */
export interface ProviderModule<Inputs, Outputs, Checked = Inputs> {
  check(olds: Partial<Checked>, news: Inputs): Promise<{ inputs: Checked; failures: CheckFailure[] }>;
  diff(id: string, olds: Outputs, news: Checked): Promise<DiffResult>;
  create(inputs: Checked): Promise<{ id: string; outs: Outputs }>;
  /** Nothing (`{}`): the object is gone. `inputs`: the inputs the live object would declare. */
  read(id: string, props?: Partial<Outputs>): Promise<{ id?: string; props?: Outputs; inputs?: Props }>;
  update(id: string, olds: Outputs, news: Checked): Promise<{ outs: Outputs }>;
  delete(id: string, props: Outputs): Promise<void>;
}
