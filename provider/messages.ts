// Words for users, rendered apart from the decisions that they report (pure; nothing here decides).
// Access (provider/access.ts): a space as CIDRs with exact counts, and what a change opens and closes.
import type { Shape, Space } from "./access";
import { shapesOf } from "./access";

/** `1 rule`, `2 rules`: the one plural helper. */
export const plural = (n: number | bigint, noun: string, nouns = `${noun}s`) => `${grouped(n)} ${n === 1 || n === 1n ? noun : nouns}`;

/** 4294901760 → `4,294,901,760` (bigint or number). */
export function grouped(n: number | bigint): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** CIDRs named per family of a space before `and N more`: a line or two per policy. */
const SHOWN_CIDRS = 8;

function shapeWords(shape: Shape): string {
  const shown = shape.cidrs.slice(0, SHOWN_CIDRS).join(", ");
  const more = shape.cidrs.length > SHOWN_CIDRS ? ` and ${plural(shape.cidrs.length - SHOWN_CIDRS, "more CIDR", "more CIDRs")}` : "";
  const list = shape.within ? `${shape.within} except ${shown}${more}` : `${shown}${more}`;
  return `${list} (${plural(shape.count, "address", "addresses")})`;
}

/**
 * A space in words, each family with its exact count: `10.7.0.0/16 (65,536 addresses)`,
 * `0.0.0.0/0 except 10.5.0.0/16 (4,294,901,760 addresses)`, IPv4 and IPv6 joined by `and`; `nothing`.
 */
export function describeSpace(s: Space): string {
  const shapes = shapesOf(s);
  return shapes.length ? shapes.map(shapeWords).join(" and ") : "nothing";
}

/** `opens X; closes Y`, either alone, or `unchanged`. */
export function accessChangeWords(change: { opens: Space; closes: Space }): string {
  const parts = [
    ...(shapesOf(change.opens).length ? [`opens ${describeSpace(change.opens)}`] : []),
    ...(shapesOf(change.closes).length ? [`closes ${describeSpace(change.closes)}`] : []),
  ];
  return parts.length ? parts.join("; ") : "unchanged";
}
