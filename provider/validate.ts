// Pure checks that `check` runs before any API call: byte limits, id prefixes, types (a rule's CIDR is
// read in provider/ip-policy-rule.ts, with the rest of that field).
// The service validates on its own; tests prove the two agree.
import { TEXT_LIMITS, TextField } from "../contract/common";

export interface CheckFailure {
  property: string;
  reason: string;
}

// What the engine sends in place of a value that is not known yet (during preview).
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

export function isUnknown(value: unknown): boolean {
  return value === UNKNOWN || (Array.isArray(value) && value.some(isUnknown));
}

// The checks below are the `check` of a field in a resource's table (./fields.ts): each gets a
// value that is set and known, and returns its problem in words that follow the property name.

/** description and metadata: strings of at most 255 / 4096 bytes of UTF-8. */
export function limitedText(name: TextField): (value: unknown) => string | undefined {
  return (value) => {
    if (typeof value !== "string") return "must be a string";
    const bytes = Buffer.byteLength(value, "utf8");
    return bytes > TEXT_LIMITS[name]
      ? `is ${bytes} bytes of UTF-8; the limit is ${TEXT_LIMITS[name]} bytes`
      : undefined;
  };
}

/** An id of one of the given kinds (ID_PREFIX.ipPolicy, …): the prefix, then letters and digits only. */
export function id(...prefixes: string[]): (value: unknown) => string | undefined {
  return (value) => idProblem(value, prefixes);
}

export function idProblem(value: unknown, prefixes: readonly string[]): string | undefined {
  const expected = prefixes.map((p) => `${p}_…`).join(" or ");
  if (typeof value !== "string") return `must be a string id (${expected})`;
  if (!prefixes.some((p) => value.startsWith(`${p}_`)))
    return `must be an id starting with ${expected}, got ${JSON.stringify(value.slice(0, 80))}`;
  if (!/^[a-z]+_[A-Za-z0-9]{1,128}$/.test(value))
    return `must contain only letters and digits after the prefix, got ${JSON.stringify(value.slice(0, 80))}`;
  return undefined;
}

/** One of a list of strings (RULE_ACTIONS). */
export function oneOf(values: readonly string[]): (value: unknown) => string | undefined {
  return (value) =>
    values.includes(value as string)
      ? undefined
      : `must be ${values.map((v) => JSON.stringify(v)).join(" or ")}, got ${JSON.stringify(value)}`;
}

/** A list of any values (an ApiKey's triggers). */
export function listOfValues(value: unknown): string | undefined {
  return Array.isArray(value) ? undefined : 'must be a list of values, e.g. ["2026-11"]';
}

/** Two lists of values the same, element by element (unset and [] alike). */
export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? []) === JSON.stringify(b ?? []);
}

export function boolean(value: unknown): string | undefined {
  return typeof value === "boolean" ? undefined : "must be true or false";
}

/** description/metadata as the service holds them: unset and "" are the same. */
export function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

export function sameText(a: unknown, b: unknown): boolean {
  return text(a) === text(b);
}
