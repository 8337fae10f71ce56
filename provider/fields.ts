// One table per resource says, for each input: its name on the wire, whether it is required, how
// check validates it, when two values are the same, and whether a change updates the object in
// place or replaces it (like one schema entry per field of a Terraform provider). These few
// functions turn a table into check's failures, diff's decision and the request bodies; mapping an
// answer to outputs stays hand-written in each resource. A table is a plain object literal of
// strings and functions, which Pulumi's closure serializer copies as it is (no Set, Map or class).
import { CheckFailure, isUnknown, UNKNOWN } from "./validate";

export interface Field<Wire extends string = string> {
  /** The name in request bodies; none for a field that lives in the path or only in Pulumi. */
  wire?: Wire;
  /** Unset (or "") is a failure; a string is appended to the message ("cidr is required, e.g. …"). */
  required?: true | string;
  /** The problem with a value that is known and set: words after the property name ("must be a string"), or whole failures. */
  check?: (value: any) => string | CheckFailure[] | undefined;
  /** The form check hands on for a valid value (the service's canonical form). */
  canonical?: (value: any) => unknown;
  /** "" and null mean unset: dropped from the inputs, by check and diff alike (optional ids). */
  emptyIsUnset?: boolean;
  /** Whether the declared value and the one in the outputs are the same; default `===`. */
  same?: (declared: any, current: any) => boolean;
  /** What a change does: update the object in place, or replace it. None: never compared. */
  onChange?: "update" | "replace";
  /** Sent when the program leaves the field out: the service's default, or the value that clears it on update. */
  unset?: unknown;
}

/** A table: one entry for every input of the resource (the compiler checks none is missing). */
export type Fields<Inputs, Wire extends string = string> = { readonly [K in keyof Required<Inputs>]: Field<Wire> };

type Table = Readonly<Record<string, Field>>;
type Values = Record<string, any>;

/** The inputs with "" and null dropped where they mean unset. */
export function normalize<T extends object>(fields: Table, inputs: T): T {
  const out: Values = { ...inputs };
  for (const [property, field] of Object.entries(fields)) {
    if (field.emptyIsUnset && (out[property] === "" || out[property] === null)) delete out[property];
  }
  return out as T;
}

/** check(): unknown property names (most likely typos), then each field's own check. Returns the inputs to use. */
export function checkFields<T extends object>(fields: Table, news: T, failures: CheckFailure[]): T {
  const inputs: Values = normalize(fields, news);
  const known = Object.keys(fields);
  for (const property of Object.keys(inputs)) {
    if (property !== "__provider" && !known.includes(property)) {
      failures.push({ property, reason: `unknown property ${property}; expected one of ${known.join(", ")}` });
    }
  }
  for (const [property, field] of Object.entries(fields)) {
    const value = inputs[property];
    if (value === UNKNOWN) continue; // not known yet (preview)
    if (value === undefined || (field.required && value === "")) {
      if (field.required) failures.push({ property, reason: `${property} is required${field.required === true ? "" : field.required}` });
      continue;
    }
    const problem = field.check?.(value);
    if (typeof problem === "string") failures.push({ property, reason: `${property} ${problem}` });
    else if (problem?.length) failures.push(...problem);
    else if (field.canonical) inputs[property] = field.canonical(value);
  }
  return inputs as T;
}

/** diff(): the fields whose change replaces the object, and those updated in place. A value not known yet counts as changed. */
export function changedFields(fields: Table, olds: object, news: object): { replaces: string[]; updates: string[] } {
  const declared: Values = normalize(fields, news);
  const current = olds as Values;
  const replaces: string[] = [];
  const updates: string[] = [];
  for (const [property, field] of Object.entries(fields)) {
    if (!field.onChange) continue;
    const same = field.same ?? ((a: unknown, b: unknown) => a === b);
    if (isUnknown(declared[property]) || !same(declared[property], current[property])) (field.onChange === "replace" ? replaces : updates).push(property);
  }
  return { replaces, updates };
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

/** An update's body: every field updated in place, always sent, so that one removed from the program is cleared. */
export function updateBody<Body>(fields: Table, inputs: object): Body {
  const body: Values = {};
  for (const [property, field] of Object.entries(fields)) {
    if (field.wire && field.onChange === "update") body[field.wire] = (inputs as Values)[property] ?? field.unset;
  }
  return body as Body;
}
