// One table per resource says, for each input, its way in and its way back: its name on the wire,
// whether it is required, how check validates it, when two values are the same, whether a change
// updates the object in place or replaces it, and where an answer of the service holds it (like one
// schema entry per field of a Terraform provider, with its flatten). These few functions turn a
// table into check's failures, diff's decision, the request bodies, the outputs an answer gives and
// the inputs a live object would declare. A table is a plain object literal of strings and
// functions, which Pulumi's closure serializer copies as it is (no Set, Map or class).
import { CheckFailure, isUnknown, UNKNOWN } from "./validate";

// The functions are methods: each field's take its own value type (`(v: string) => …`), which a method's parameter,
// checked both ways, accepts.
export interface Field<Wire extends string = string> {
  /** The name in request bodies; none for a field that lives in the path or only in Pulumi. */
  wire?: Wire;
  /** Unset (or "") is a failure; a string is appended to the message ("cidr is required, e.g. …"). */
  required?: true | string;
  /**
   * The problem with a value that is known and set: words after
   * the property name ("must be a string"), or whole failures.
   */
  check?(value: unknown): string | CheckFailure[] | undefined;
  /** The form check hands on for a valid value (the service's canonical form). */
  canonical?(value: unknown): unknown;
  /** "" and null mean unset: dropped from the inputs, by check and diff alike (optional ids). */
  emptyIsUnset?: boolean;
  /** Whether the declared value and the one in the outputs are the same; default `===`. */
  same?(declared: unknown, current: unknown): boolean;
  /** What a change does: update the object in place, or replace it. None: never compared. */
  onChange?: "update" | "replace";
  /** Sent when the program leaves the field out: the service's default, or the value that clears it on update. */
  unset?: unknown;
  /**
   * The way back: the value in an answer of the service (`id`: the object's id, for a field of the path), as the
   * outputs hold it under the property's name. None: kept from the program.
   */
  read?(body: unknown, id: string): unknown;
  /**
   * How the field stands in the inputs, for the engine's per-property diff after a refresh (read()
   * reports the inputs the live object would declare). Default: as the program declares it; read
   * states a live value unless it is `unset` (an empty description is not declared). "stated":
   * check fills in `unset` when the program leaves it out and read always states it (a module
   * disabled by hand shows as `~ enabled: false => true`). "chosen": read never states it, as
   * leaving it out is a choice no live value contradicts (an ownerId left out means the caller).
   */
  declare?: "stated" | "chosen";
}

/** A table: one entry for every input of the resource (the compiler checks none is missing). */
export type Fields<Inputs, Wire extends string = string> = { readonly [K in keyof Required<Inputs>]: Field<Wire> };

type Table = Readonly<Record<string, Field>>;
type Values = Record<string, unknown>;

/** The inputs with "" and null dropped where they mean unset. */
export function normalize<T extends object>(fields: Table, inputs: T): T {
  const out = { ...inputs } as Values;
  for (const [property, field] of Object.entries(fields)) {
    if (field.emptyIsUnset && (out[property] === "" || out[property] === null)) delete out[property];
  }
  return out as T;
}

/**
 * Where a nested object sits (a rule of a set: `rules[3]`, "a rule", named "10.1.0.0/16"): failures
 * name it in the reason only, so that Pulumi does not print the whole list.
 */
export interface Within {
  path: string;
  noun: string;
  /** What names the object (a rule's `cidr`: "rule 10.1.0.0/16"): failures of its other properties end with it. */
  name?: { property: string; label: string };
}

/** check(): unknown property names (most likely typos), then each field's own check. Returns the inputs to use. */
export function checkFields<T extends object>(fields: Table, news: T, failures: CheckFailure[], within?: Within): T {
  const inputs = normalize(fields, news) as Values;
  const known = Object.keys(fields);
  const named = (property: string) =>
    within?.name && property !== within.name.property ? ` (${within.name.label})` : "";
  const fail = (property: string, words: string) =>
    failures.push(
      within
        ? { property: "", reason: `${within.path}.${property}${words}${named(property)}` }
        : { property, reason: `${property}${words}` },
    );
  for (const property of Object.keys(inputs)) {
    // Pulumi's own keys (__provider of the dynamic host, __urn)
    // pass; inside a nested object they are typos like any other.
    if ((property.startsWith("__") && !within) || known.includes(property)) continue;
    if (within) fail(property, ` is not a property of ${within.noun}; expected one of ${known.join(", ")}`);
    else failures.push({ property, reason: `unknown property ${property}; expected one of ${known.join(", ")}` });
  }
  for (const [property, field] of Object.entries(fields)) {
    const value = inputs[property];
    if (value === UNKNOWN) continue; // not known yet (preview)
    if (value === undefined && field.declare === "stated") inputs[property] = field.unset;
    if (value === undefined || (field.required && value === "")) {
      if (field.required) fail(property, ` is required${field.required === true ? "" : field.required}`);
      continue;
    }
    const problem = field.check?.(value);
    if (typeof problem === "string") fail(property, ` ${problem}`);
    else if (problem?.length) failures.push(...problem);
    else if (field.canonical) inputs[property] = field.canonical(value);
  }
  return inputs as T;
}

/**
 * diff(): the fields whose change replaces the object, and those
 * updated in place. A value not known yet counts as changed.
 */
export function changedFields(fields: Table, olds: object, news: object): { replaces: string[]; updates: string[] } {
  const declared = normalize(fields, news) as Values;
  const current = olds as Values;
  const replaces: string[] = [];
  const updates: string[] = [];
  for (const [property, field] of Object.entries(fields)) {
    if (!field.onChange) continue;
    const same = field.same ?? ((a: unknown, b: unknown) => a === b);
    if (isUnknown(declared[property]) || !same(declared[property], current[property]))
      (field.onChange === "replace" ? replaces : updates).push(property);
  }
  return { replaces, updates };
}

/**
 * The per-property diff Pulumi shows (a plugin's DetailedDiff; the dynamic-provider host ignores it):
 * each changed property, updated or replaced.
 */
export function propertyDiff(changes: { replaces: string[]; updates: string[] }): Record<string, DiffKind> {
  const out: Record<string, DiffKind> = {};
  for (const property of changes.updates) out[property] = "update";
  for (const property of changes.replaces) out[property] = "update-replace";
  return out;
}

/** What happens to one property path, in the terms of Pulumi's DetailedDiff. */
export type DiffKind = "add" | "delete" | "update" | "update-replace";

/** Whether an object (its outputs) already is as declared: no field to update or replace. */
export function asDeclared(fields: Table, outputs: object, inputs: object): boolean {
  const { replaces, updates } = changedFields(fields, outputs, inputs);
  return replaces.length + updates.length === 0;
}

/** Another object of the API, as an output refers to it (an IP policy, a certificate authority). */
export interface Reference {
  /** The object's id. */
  id: string;
  /** URI of the object on the API. */
  uri: string;
}

/**
 * The outputs an answer gives for the fields with a way back (the
 * resource adds what is not an input: uri, createdAt, references).
 */
export function outputsOf<Outputs = Values>(fields: Table, body: unknown, id = ""): Outputs {
  const out: Values = {};
  for (const [property, field] of Object.entries(fields)) if (field.read) out[property] = field.read(body, id);
  return out as Outputs;
}

/** The inputs a live object would declare, from its outputs, in the form check hands them on (see Field.declare). */
export function liveInputs<Inputs = Values>(fields: Table, outputs: object): Inputs {
  const inputs: Values = {};
  for (const [property, field] of Object.entries(fields)) {
    const value = (outputs as Values)[property];
    if (!field.read || field.declare === "chosen" || value === undefined) continue;
    if (field.declare !== "stated" && value === field.unset) continue;
    inputs[property] = field.canonical ? field.canonical(value) : value;
  }
  return inputs as Inputs;
}

/** A create's body: every field with a wire name that is set (or has a default); "" is left out. */
export function createBody<Body>(fields: Table, inputs: object): Body {
  const body: Values = {};
  for (const [property, field] of Object.entries(fields)) {
    const value = (inputs as Values)[property] ?? field.unset;
    if (field.wire && value !== undefined && value !== "") body[field.wire] = value;
  }
  return body as Body;
}

/**
 * An update's body: the fields updated in place, a field removed from the program sent as its
 * `unset` (which clears it). Given what the state records (`current`), only the fields that differ
 * from it: an update changes what its preview showed, and nothing else (a field changed by hand
 * since the last refresh, which no preview showed, stays as it is).
 */
export function updateBody<Body>(fields: Table, inputs: object, current?: object): Body {
  const changed = current && changedFields(fields, current, inputs).updates;
  const body: Values = {};
  for (const [property, field] of Object.entries(fields)) {
    if (field.wire && field.onChange === "update" && (!changed || changed.includes(property)))
      body[field.wire] = (inputs as Values)[property] ?? field.unset;
  }
  return body as Body;
}
