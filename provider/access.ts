// Pure, no I/O: the one CIDR module (parse, canonical form, compare, one cache) and a policy's access.
// The service's rule: a connection is allowed only if its source address lies in at least one `allow`
// rule of the policy and in no `deny` rule. Access is computed exactly, as ranges of addresses (bigint,
// IPv4 and IPv6 apart), and handed back as a minimal sorted list of CIDRs per family with its counts.
// The set's plan (what a step opens), its display, `accessctl-export --access` and the policy pack read
// this one model. Words are messages.ts's: this module decides, it does not phrase.
// Imports: ipaddr.js and state.ts only (test/provider/access.test.ts checks that nothing of http/,
// engine, run-record or config is loaded with it).
import * as ipaddr from "ipaddr.js";
import { processState } from "./state";

export type Action = "allow" | "deny";
export interface AccessRule {
  cidr: string;
  action: Action;
}
/** Addresses as minimal sorted CIDR lists, IPv4 and IPv6 apart, with exact counts. */
export interface Space {
  v4: string[];
  v6: string[];
  v4Count: bigint;
  v6Count: bigint;
}

// ---- CIDRs: parse, canonical form, compare (one parser, one cache) -------------------------------

/** A valid CIDR: its canonical text, its family and its addresses (first to last, inclusive). */
export interface Cidr {
  readonly cidr: string;
  readonly v6: boolean;
  readonly prefix: number;
  readonly first: bigint;
  readonly last: bigint;
}
/** What parseCidr says of a text: the CIDR, or why it is not one. */
export type ParsedCidr = Cidr | { readonly reason: string };

/**
 * The CIDRs this process has read, each text once (a set's check, plan, diff and read meet the same
 * texts again and again: 5,000 rules were about 120,000 readings a command): a map from text to what
 * parseCidr says of it, emptied when it reaches CIDR_MEMO entries (about 20 MB).
 */
const CIDR_MEMO = 100_000;
function parsedCidrs(): Map<string, ParsedCidr> {
  return processState<Map<string, ParsedCidr>>("cidrs", () => new Map());
}

/**
 * A CIDR as the service reads it: IPv4 dotted decimal or IPv6, a prefix length, no host bits; an
 * address alone is one host (/32, /128).
 * The canonical form: IPv6 compressed and lower case; an IPv4-mapped IPv6 range, such as
 * ::ffff:10.0.0.0/104, as the IPv4 range it is, 10.0.0.0/8. Each text is read once a process
 * (parsedCidrs); the answer is shared: not to be changed.
 * See also parseCidr in emulator/ip-policy-rule.ts: the service's reading, written independently
 * so that test/provider/agreement.test.ts compares two programs, not one with itself.
 */
export function parseCidr(text: string): ParsedCidr {
  const memo = parsedCidrs();
  let parsed = memo.get(text);
  if (parsed === undefined) {
    parsed = readCidr(text);
    if (memo.size >= CIDR_MEMO) memo.clear();
    memo.set(text, parsed);
  }
  return parsed;
}

const quoted = (text: string) => JSON.stringify(text);

function readCidr(text: string): ParsedCidr {
  if (!text.includes("/")) {
    // One address is the range of one host: /32 for IPv4, /128 for IPv6.
    const whole = `${text}/${text.includes(":") ? 128 : 32}`;
    const host = parseCidr(whole);
    return "cidr" in host ? host : { reason: host.reason.replace(quoted(whole), quoted(text)) };
  }
  const match = /^([^/]+)\/(\d{1,3})$/.exec(text);
  if (!match) return { reason: `${quoted(text)} is not in address/prefix form` };
  const [, written, prefixText] = match;
  const prefix = Number(prefixText);
  if (String(prefix) !== prefixText) return { reason: `${quoted(text)} has a prefix length with a leading zero` };
  const address = addressOf(text, written);
  if (typeof address !== "string") return address;
  const v6 = address.includes(":");
  const maxPrefix = v6 ? 128 : 32;
  if (prefix > maxPrefix) {
    return { reason: `${quoted(text)}: the prefix length of an ${v6 ? "IPv6" : "IPv4"} range is at most ${maxPrefix}` };
  }
  const bytes = ipaddr.parse(address).toByteArray();
  if (v6 && prefix >= 96 && bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) {
    // IPv4-mapped: the IPv4 range it names, one range whatever its spelling.
    const ipv4 = `${bytes.slice(12).join(".")}/${prefix - 96}`;
    const asIpv4 = parseCidr(ipv4);
    if ("cidr" in asIpv4) return asIpv4;
    return { reason: asIpv4.reason.replace(quoted(ipv4), `${quoted(text)} (the IPv4 range ${ipv4})`) };
  }
  const first = bytes.reduce((n, b) => (n << 8n) | BigInt(b), 0n);
  const size = 1n << BigInt(maxPrefix - prefix);
  if (first % size !== 0n) {
    const network = formatCidr(v6, first - (first % size), prefix);
    return { reason: `${quoted(text)} has host bits set; did you mean ${network}?` };
  }
  return { cidr: formatCidr(v6, first, prefix), v6, prefix, first, last: first + size - 1n };
}

/** The address part of a CIDR text as ipaddr.js may read it (a trailing dotted quad of IPv6 as hex), or why not. */
function addressOf(text: string, written: string): string | { reason: string } {
  const notAnAddress = { reason: `${quoted(text)} is not an IPv4 or IPv6 address range` };
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(written) && ipaddr.IPv4.isValidFourPartDecimal(written)) {
    if (written.split(".").some((octet) => octet.length > 1 && octet.startsWith("0"))) {
      return { reason: `${quoted(text)} has an octet with a leading zero` };
    }
    return written;
  }
  if (!written.includes(":") || written.includes("%")) return notAnAddress;
  // A trailing dotted quad (::ffff:192.0.2.1) becomes its two groups of hex, read here: ipaddr.js
  // reads ::1.2.3.4 as ::ffff:1.2.3.4 and takes octets with leading zeros.
  let address = written;
  const quad = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (quad) {
    const octets = quad.slice(2);
    if (octets.some((o) => Number(o) > 255 || (o.length > 1 && o.startsWith("0")))) return notAnAddress;
    const [a, b, c, d] = octets.map(Number);
    address = `${quad[1]}${(a * 256 + b).toString(16)}:${(c * 256 + d).toString(16)}`;
  }
  return address.includes(".") || !ipaddr.IPv6.isValid(address) ? notAnAddress : address;
}

/** An address of a family as text: dotted decimal, or IPv6 as RFC 5952 writes it (ipaddr.js). */
export function formatAddress(v6: boolean, n: bigint): string {
  const bytes: number[] = new Array(v6 ? 16 : 4);
  for (let i = bytes.length - 1; i >= 0; i--, n >>= 8n) bytes[i] = Number(n & 255n);
  return v6 ? ipaddr.fromByteArray(bytes).toString() : bytes.join(".");
}

const formatCidr = (v6: boolean, first: bigint, prefix: number) => `${formatAddress(v6, first)}/${prefix}`;

/** A CIDR the service accepts (see parseCidr): undefined, or why not (the `cidr` field's check). */
export function cidr(value: unknown): string | undefined {
  if (typeof value !== "string") return "must be a string";
  const parsed = parseCidr(value);
  return "reason" in parsed ? parsed.reason : undefined;
}

/** A valid CIDR in the service's canonical form (2001:DB8::/32 is 2001:db8::/32); any other text as it is. */
export function canonicalCidr(value: string): string {
  const parsed = parseCidr(value);
  return "cidr" in parsed ? parsed.cidr : value;
}

/** Two CIDRs that name the same range (IPv6 case and zero compression aside). */
export function sameCidr(a: unknown, b: unknown): boolean {
  if (typeof a !== "string" || typeof b !== "string") return a === b;
  const pa = parseCidr(a);
  const pb = parseCidr(b);
  return "cidr" in pa && "cidr" in pb ? pa.cidr === pb.cidr : a === b;
}

/** A stable order: IPv4 before IPv6, then by address, then by prefix length; texts that are no CIDR by their text. */
export function compareCidrs(a: string, b: string): number {
  const ka = parseCidr(a);
  const kb = parseCidr(b);
  if (!("cidr" in ka) || !("cidr" in kb)) return a < b ? -1 : a > b ? 1 : 0;
  if (ka.v6 !== kb.v6) return ka.v6 ? 1 : -1;
  if (ka.first !== kb.first) return ka.first < kb.first ? -1 : 1;
  return ka.prefix - kb.prefix;
}

/** A valid CIDR, or an error that names the text and why (the access model takes CIDRs the service accepts). */
function validCidr(text: string): Cidr {
  const parsed = parseCidr(text);
  if ("reason" in parsed) throw new Error(`not a CIDR: ${parsed.reason}`);
  return parsed;
}

// ---- ranges: sorted, disjoint, not adjacent, per family ------------------------------------------

/** Inclusive ranges of addresses, sorted, disjoint and never adjacent. */
type Range = readonly [bigint, bigint];
interface Ranges {
  v4: Range[];
  v6: Range[];
}
const FAMILIES = ["v4", "v6"] as const;

/** Ranges that may overlap, in any order, merged into sorted, disjoint, non-adjacent ones. */
function merged(ranges: Range[]): Range[] {
  const sorted = [...ranges].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const out: [bigint, bigint][] = [];
  for (const [first, last] of sorted) {
    const end = out[out.length - 1];
    if (end && first <= end[1] + 1n) {
      if (last > end[1]) end[1] = last;
    } else out.push([first, last]);
  }
  return out;
}

/** The addresses of `a` not in `b`. */
function minus(a: Range[], b: Range[]): Range[] {
  const out: Range[] = [];
  let j = 0;
  for (const [first, last] of a) {
    let from = first;
    while (j < b.length && b[j][1] < from) j++;
    for (let k = j; k < b.length && b[k][0] <= last && from <= last; k++) {
      if (b[k][0] > from) out.push([from, b[k][0] - 1n]);
      from = b[k][1] + 1n;
    }
    if (from <= last) out.push([from, last]);
  }
  return out;
}

/** The addresses in both `a` and `b`. */
function both(a: Range[], b: Range[]): Range[] {
  const out: Range[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const first = a[i][0] > b[j][0] ? a[i][0] : b[j][0];
    const last = a[i][1] < b[j][1] ? a[i][1] : b[j][1];
    if (first <= last) out.push([first, last]);
    if (a[i][1] < b[j][1]) i++;
    else j++;
  }
  return out;
}

const perFamily = (a: Ranges, b: Ranges, op: (x: Range[], y: Range[]) => Range[]): Ranges => ({
  v4: op(a.v4, b.v4),
  v6: op(a.v6, b.v6),
});

function rangesOfCidrs(cidrs: Cidr[]): Ranges {
  const v4: Range[] = [];
  const v6: Range[] = [];
  for (const c of cidrs) (c.v6 ? v6 : v4).push([c.first, c.last]);
  return { v4: merged(v4), v6: merged(v6) };
}

/** The ranges of a list of rules' allows and of its denies. */
function ruleRanges(rules: readonly AccessRule[]): { allows: Ranges; denies: Ranges } {
  const allows: Cidr[] = [];
  const denies: Cidr[] = [];
  for (const r of rules) (r.action === "allow" ? allows : denies).push(validCidr(r.cidr));
  return { allows: rangesOfCidrs(allows), denies: rangesOfCidrs(denies) };
}

/** The ranges a list of rules allows: in some allow, in no deny. */
function allowedRanges(rules: readonly AccessRule[]): Ranges {
  const { allows, denies } = ruleRanges(rules);
  return perFamily(allows, denies, minus);
}

/** The fewest CIDRs that make up a range: at each step the largest aligned block that fits. */
function cidrsOfRange(v6: boolean, [first, last]: Range, out: string[]): void {
  const bits = v6 ? 128 : 32;
  let at = first;
  while (at <= last) {
    let size = 0; // log2 of the block
    while (size < bits && ((at >> BigInt(size)) & 1n) === 0n && at + (1n << BigInt(size + 1)) - 1n <= last) size++;
    out.push(formatCidr(v6, at, bits - size));
    at += 1n << BigInt(size);
  }
}

const countOf = (ranges: Range[]) => ranges.reduce((n, [first, last]) => n + last - first + 1n, 0n);

function cidrsOf(v6: boolean, ranges: Range[]): string[] {
  const out: string[] = [];
  for (const range of ranges) cidrsOfRange(v6, range, out);
  return out;
}

/** The ranges each Space this module made came from, and its list lengths: its words need not read its CIDRs again. */
function spaceRanges(): WeakMap<Space, { r: Ranges; v4: number; v6: number }> {
  return processState<WeakMap<Space, { r: Ranges; v4: number; v6: number }>>("space-ranges", () => new WeakMap());
}

function spaceOfRanges(r: Ranges): Space {
  const s = { v4: cidrsOf(false, r.v4), v6: cidrsOf(true, r.v6), v4Count: countOf(r.v4), v6Count: countOf(r.v6) };
  spaceRanges().set(s, { r, v4: s.v4.length, v6: s.v6.length });
  return s;
}

/** A space's ranges: as it was made, unless it was changed since (or made elsewhere): then read from its CIDRs. */
function rangesOfSpace(s: Space): Ranges {
  const known = spaceRanges().get(s);
  const same = known && known.v4 === s.v4.length && known.v6 === s.v6.length;
  if (same && countOf(known.r.v4) === s.v4Count && countOf(known.r.v6) === s.v6Count) return known.r;
  return rangesOfCidrs([...s.v4, ...s.v6].map(validCidr));
}

// ---- access -------------------------------------------------------------------------------------

/** The addresses a policy of these rules allows: in some allow and in no deny. Throws on a text that is no CIDR. */
export function accessOf(rules: AccessRule[]): Space {
  return spaceOfRanges(allowedRanges(rules));
}

/** What a change of a policy's rules opens (allowed after, not before) and closes (allowed before, not after). */
export function accessChange(before: AccessRule[], after: AccessRule[]): { opens: Space; closes: Space } {
  const was = allowedRanges(before);
  const now = allowedRanges(after);
  return { opens: spaceOfRanges(perFamily(now, was, minus)), closes: spaceOfRanges(perFamily(was, now, minus)) };
}

/**
 * What replacing `before` by `after` can open beside any other rules of the policy: the union of what
 * it opens beside no other rule (an allow added) and beside an allow of everything (a deny removed).
 * Those two cover every case: an address opened beside some rules is opened beside one of them.
 */
export function mayOpen(before: AccessRule[], after: AccessRule[]): Space {
  return spaceOfRanges(mayOpenRanges(before, after));
}

/** Whether mayOpen is not empty (a step's `opens`, without writing the CIDRs out). */
export function opensAny(before: AccessRule[], after: AccessRule[]): boolean {
  const r = mayOpenRanges(before, after);
  return r.v4.length > 0 || r.v6.length > 0;
}

function mayOpenRanges(before: AccessRule[], after: AccessRule[]): Ranges {
  const was = ruleRanges(before);
  const now = ruleRanges(after);
  const alone = perFamily(perFamily(now.allows, now.denies, minus), perFamily(was.allows, was.denies, minus), minus);
  // Beside an allow of everything, a list allows all but its denies: what it opens is the denies it no longer has.
  const beside = perFamily(was.denies, now.denies, minus);
  return perFamily(alone, beside, (a, b) => merged([...a, ...b]));
}

/** What a change does to a policy's access: what it opens and closes, or why that is not known. */
export type AccessEffect = { opens: Space; closes: Space } | { unknownActions: number } | { unreadable: string };

/** accessChange, or why it cannot be known: an action not known yet (a count), a text that is no CIDR. */
export function accessEffect(before: AccessRule[], after: { cidr: string; action: unknown }[]): AccessEffect {
  const unknownActions = after.filter((r) => r.action !== "allow" && r.action !== "deny").length;
  if (unknownActions) return { unknownActions };
  try {
    return accessChange(before, after as AccessRule[]);
  } catch (e) {
    return { unreadable: (e as Error).message };
  }
}

/**
 * What one rule's change (`before` → `after`: none or one rule each) does to a policy's access beside
 * its other rules: exact when they are known; else the most it can do beside any rules (mayOpen both
 * ways), which the words call "at most".
 */
export function ruleEffect(
  others: AccessRule[] | undefined,
  before: AccessRule[],
  after: { cidr: string; action: unknown }[],
): AccessEffect {
  if (others) return accessEffect([...others, ...before], [...others, ...after]);
  const known = accessEffect(before, after);
  if (!("opens" in known)) return known;
  return { opens: mayOpen(before, after as AccessRule[]), closes: mayOpen(after as AccessRule[], before) };
}

/** What a change opens and closes. */
export interface Change {
  opens: Space;
  closes: Space;
}

/**
 * What an update did to a policy's access against what its reviewed plan showed: `exactly`; `less`
 * (some of the plan held back, nothing beyond it opened); `more` (something the plan did not show
 * opening was opened, or closed). `heldBack`: the plan's that was not done; `beyond`: done, not in the plan.
 */
export interface AgainstPlan {
  verdict: "exactly" | "less" | "more";
  done: Change;
  heldBack: Change;
  beyond: Change;
}

export function againstPlan(planned: Change, done: Change): AgainstPlan {
  const heldBack = { opens: subtract(planned.opens, done.opens), closes: subtract(planned.closes, done.closes) };
  const beyond = { opens: subtract(done.opens, planned.opens), closes: subtract(done.closes, planned.closes) };
  const none = (c: Change) => isEmpty(c.opens) && isEmpty(c.closes);
  const verdict = !none(beyond) ? "more" : !none(heldBack) ? "less" : "exactly";
  return { verdict, done, heldBack, beyond };
}

export function isEmpty(s: Space): boolean {
  return s.v4Count === 0n && s.v6Count === 0n;
}

export function intersect(a: Space, b: Space): Space {
  return spaceOfRanges(perFamily(rangesOfSpace(a), rangesOfSpace(b), both));
}

export function subtract(a: Space, b: Space): Space {
  return spaceOfRanges(perFamily(rangesOfSpace(a), rangesOfSpace(b), minus));
}

/** The space of some CIDRs (any order, overlapping or not), minimal. Throws on a text that is no CIDR. */
export function spaceOf(cidrs: string[]): Space {
  return spaceOfRanges(rangesOfCidrs(cidrs.map(validCidr)));
}

/** How many addresses of `first`…`last` lie in sorted disjoint `ranges` (a binary search, then the overlaps). */
function overlap(ranges: Range[], first: bigint, last: bigint): bigint {
  let lo = 0;
  let hi = ranges.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ranges[mid][1] < first) lo = mid + 1;
    else hi = mid;
  }
  let n = 0n;
  for (let i = lo; i < ranges.length && ranges[i][0] <= last; i++) {
    n += (ranges[i][1] < last ? ranges[i][1] : last) - (ranges[i][0] > first ? ranges[i][0] : first) + 1n;
  }
  return n;
}

/** A policy's access and which rules make it. */
export interface AccessExplained {
  space: Space;
  /** Each CIDR of the space (IPv4, then IPv6), its count and the allow rules that let it in (indexes of rules). */
  cidrs: { cidr: string; count: bigint; allows: number[] }[];
  /**
   * Per rule (same order): an allow's addresses that the policy lets in; a deny's that some allow
   * would let in and it keeps out (0: a deny outside every allow, which changes nothing).
   */
  rules: bigint[];
}

/** accessOf, with what each rule contributes and the allow rules behind each CIDR. Throws on a text that is no CIDR. */
export function explainAccess(rules: AccessRule[]): AccessExplained {
  const parsed = rules.map((r) => validCidr(r.cidr));
  const { allows } = ruleRanges(rules);
  const allowed = allowedRanges(rules);
  const space = spaceOfRanges(allowed);
  const cidrs = [...space.v4, ...space.v6].map((cidr) => {
    const c = validCidr(cidr);
    return { cidr, c, count: c.last - c.first + 1n, allows: [] as number[] };
  });
  const starts = { v4: cidrs.filter((x) => !x.c.v6), v6: cidrs.filter((x) => x.c.v6) };
  rules.forEach((r, i) => {
    if (r.action !== "allow") return;
    const family = starts[parsed[i].v6 ? "v6" : "v4"];
    let at = 0; // the first CIDR not below the rule (they are sorted and disjoint)
    for (let hi = family.length; at < hi;) {
      const mid = (at + hi) >> 1;
      if (family[mid].c.last < parsed[i].first) at = mid + 1;
      else hi = mid;
    }
    for (; at < family.length && family[at].c.first <= parsed[i].last; at++) family[at].allows.push(i);
  });
  const counts = rules.map((r, i) => {
    const c = parsed[i];
    return overlap((r.action === "allow" ? allowed : allows)[c.v6 ? "v6" : "v4"], c.first, c.last);
  });
  return { space, cidrs: cidrs.map(({ cidr, count, allows }) => ({ cidr, count, allows })), rules: counts };
}

/** Whether an address (or every address of a CIDR) lies in a space. */
export function inSpace(s: Space, address: string): boolean {
  const c = validCidr(address);
  return (c.v6 ? s.v6 : s.v4).some((x) => {
    const r = validCidr(x);
    return r.first <= c.first && c.last <= r.last;
  });
}

/** A part of a space as words name it: a CIDR, or a CIDR `except` some CIDRs inside it. */
export interface Part {
  cidr: string;
  except?: string[];
}

/** A family of a space in its fewest words: its parts (each CIDR named counts one), and its count. */
export interface Shape {
  v6: boolean;
  count: bigint;
  parts: Part[];
}

/** Above this many ranges a family is named by its CIDRs alone (the search for `except` forms is skipped). */
const SHAPED_RANGES = 2_000;

/** A space's families, each in its fewest words: `0.0.0.0/0 except 10.5.0.0/16` rather than 16 CIDRs. */
export function shapesOf(s: Space): Shape[] {
  const ranges = rangesOfSpace(s);
  return FAMILIES.flatMap((family): Shape[] => {
    const v6 = family === "v6";
    const r = ranges[family];
    if (!r.length) return [];
    const count = v6 ? s.v6Count : s.v4Count;
    if (r.length > SHAPED_RANGES) return [{ v6, count, parts: s[family].map((cidr) => ({ cidr })) }];
    return [{ v6, count, parts: fewest(v6, 0n, 0, r).parts() }];
  });
}

/**
 * The fewest words for the ranges `rs` (those that meet it) inside the CIDR at `first`/`prefix`: the
 * CIDR itself, nothing, the CIDR except its holes, or the best of its two halves; `holes` counts the
 * CIDRs of what it lacks. Visits only the CIDRs that a range boundary cuts.
 */
type Fewest = { cost: number; holes: number; parts: () => Part[] };
function fewest(v6: boolean, first: bigint, prefix: number, rs: Range[]): Fewest {
  const bits = v6 ? 128 : 32;
  const last = first + (1n << BigInt(bits - prefix)) - 1n;
  const cidr = formatCidr.bind(null, v6, first, prefix);
  if (!rs.length) return { cost: 0, holes: 1, parts: () => [] };
  if (rs[0][0] <= first && rs[0][1] >= last) return { cost: 1, holes: 0, parts: () => [{ cidr: cidr() }] };
  const mid = first + (1n << BigInt(bits - prefix - 1));
  const left = fewest(
    v6,
    first,
    prefix + 1,
    rs.filter((r) => r[0] < mid),
  );
  const right = fewest(
    v6,
    mid,
    prefix + 1,
    rs.filter((r) => r[1] >= mid),
  );
  const holes = left.holes + right.holes;
  if (1 + holes < left.cost + right.cost) {
    return { cost: 1 + holes, holes, parts: () => [{ cidr: cidr(), except: cidrsOf(v6, minus([[first, last]], rs)) }] };
  }
  return { cost: left.cost + right.cost, holes, parts: () => [...left.parts(), ...right.parts()] };
}

export { describeSpace } from "./messages";
