// Pure: the signed plan file's format (saved-plan.ts reads and writes it). One shape, no alternatives:
// the file is exactly its canonical JSON (keys sorted, no white space) and a newline, and `mac` is an
// HMAC-SHA256 over the canonical JSON of everything else, with a key derived from the pipeline's
// secret. A rule's texts are there only as a digest bound to the rule (policy, id, CIDR, action) and
// to the file's nonce: equal texts give unequal digests, and no entry can stand for another.
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto";
import { accessChange, AccessRule, Change, spaceOf } from "../access";
import { plainError } from "../errors";
import { isUnknownValue, Unknown } from "./declared";
import type { RuleSeen, Shown, StepSeen } from "./promise";

export const FORMAT = "accessctl-plan/3";
/** Formats of earlier versions of this provider: refused as older, not as foreign. */
const OLDER_FORMATS: Record<string, string> = { "accessctl-plan/2": "accessctl-plan/2, which holds no access effect" };

/**
 * Whether a set's Delete may go on in a job of `role` (config.ts planRole). A plan never shows a set's
 * delete: the engine's preview of a delete or a destroy calls no provider, so no file holds one. A job
 * holding to a reviewed plan (ACCESSCTL_PLAN_HOLD) does what its reviewers saw and nothing else: it
 * deletes no set. (A job saving one writes nothing at all: operation.ts refuses every write there.)
 */
export type SetDeleteDecision = { kind: "delete" } | { kind: "refuse"; because: "no-plan-shows-a-delete" };

export function setDeleteUnderRole(role: "save" | "hold" | undefined): SetDeleteDecision {
  return role === "hold" ? { kind: "refuse", because: "no-plan-shows-a-delete" } : { kind: "delete" };
}

export interface FileRule {
  id: string;
  cidr: string;
  action: string;
  /** The rule's texts as a digest bound to the rule and the file (bind). */
  texts: string;
}
export type FileDeclared = Omit<FileRule, "id">;
export type FileStep =
  | { op: "create"; to: { cidr: string; action: string; texts: string } }
  | { op: "retext"; rule: FileRule; to: { texts: string } }
  | { op: "move"; rule: FileRule; to: { cidr: string; texts: string } }
  | { op: "flip"; rule: FileRule; to: { action: string; texts: string } }
  | { op: "delete"; rule: FileRule };

/** What a set's plan does to its policy's access, as its preview showed it: minimal canonical CIDRs, IPv4 first. */
export interface FileAccess {
  opens: string[];
  closes: string[];
}

/** What a preview saved of one set. */
export interface FileSet {
  /** The set's policy ("" when its preview did not know it). */
  policy: string;
  /** Whether its preview knew every rule and value: a plan of values nobody saw holds no deploy. */
  known: boolean;
  /** Whether its preview refreshed the set first (`--refresh`): `from` is then what the policy held. */
  refreshed: boolean;
  /** The rules the state recorded, as the preview saw them (none for a new set). */
  from: FileRule[];
  /** The rules the program declared. */
  declared: FileDeclared[];
  /** What it showed. */
  steps: FileStep[];
  /** A takeover, and the ids its listing showed it would take. */
  takesOver: boolean;
  taken: string[];
  /** What the preview showed the steps do to the policy's access (none when not known): `up` opens nothing beyond. */
  access: FileAccess;
}

export interface PlanFile {
  format: typeof FORMAT;
  /** Which key signed it (derived apart from the MAC's key): tells "another key" from "changed". */
  keyId: string;
  nonce: string;
  /** The `pulumi` process that wrote it (pid-start): a later preview starts the file afresh. */
  command: string;
  written: string;
  sets: Record<string, FileSet>;
  mac: string;
}

// ---- canonical JSON, keys, signature ----------------------------------------------------------------

/** JSON with every object's keys sorted (by UTF-16 code units) and no white space: one text per value. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(",")}}`;
  }
  const scalar = v === null || typeof v === "string" || typeof v === "boolean";
  if (scalar || (typeof v === "number" && Number.isSafeInteger(v))) return JSON.stringify(v);
  throw plainError(`a plan file holds JSON values only (whole numbers), not ${String(v)}`);
}

export interface PlanKeys {
  mac: Buffer;
  digest: Buffer;
  id: string;
}

/** The file's keys, derived (HKDF-SHA256, fixed labels) from the pipeline's secret: the MAC's, the digests', its id. */
export function planKeys(secret: string): PlanKeys {
  const derive = (label: string, n: number) => Buffer.from(hkdfSync("sha256", secret, "accessctl plan file", label, n));
  return { mac: derive("mac", 32), digest: derive("rule digests", 32), id: derive("key id", 8).toString("hex") };
}

const macOf = (keys: PlanKeys, body: Omit<PlanFile, "mac">) =>
  createHmac("sha256", keys.mac)
    .update(`${FORMAT}\n${canonical(body)}`)
    .digest("hex");

/** A new, empty plan of the command `command`, with a fresh nonce. */
export function newPlan(keys: PlanKeys, command: string): Omit<PlanFile, "mac"> {
  return { format: FORMAT, keyId: keys.id, nonce: randomBytes(16).toString("hex"), command, written: "", sets: {} };
}

/** The file's text: the plan signed, canonical, one line. */
export function signed(keys: PlanKeys, body: Omit<PlanFile, "mac">): string {
  return `${canonical({ ...body, mac: macOf(keys, body) })}\n`;
}

/** Why a file's text is not a plan these keys signed ("another key", "changed", "older", "not a plan"), or its plan. */
export type Refusal = { refused: "another key" | "changed" | "older" | "not a plan"; detail?: string };

export function verify(keys: PlanKeys, text: string): { plan: PlanFile } | Refusal {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { refused: "not a plan", detail: `not JSON: ${(e as Error).message}` };
  }
  if (!isObject(value)) return { refused: "not a plan", detail: "not a JSON object" };
  if (value.format !== FORMAT) {
    if (Object.hasOwn(value, "version")) return { refused: "older", detail: "without a signature" };
    const older = typeof value.format === "string" && Object.hasOwn(OLDER_FORMATS, value.format);
    if (older) return { refused: "older", detail: OLDER_FORMATS[value.format as string] };
    return { refused: "not a plan", detail: `no format ${FORMAT}` };
  }
  if (value.keyId !== keys.id) return { refused: "another key" };
  const { mac, ...body } = value;
  const expected = Buffer.from(macOf(keys, body as Omit<PlanFile, "mac">), "hex");
  const given = typeof mac === "string" && /^[0-9a-f]{64}$/.test(mac) ? Buffer.from(mac, "hex") : Buffer.alloc(0);
  const same = given.length === expected.length && timingSafeEqual(given, expected);
  if (!same || text !== `${canonical(value)}\n`) return { refused: "changed" };
  try {
    return { plan: planFile(value, "file") };
  } catch (e) {
    return { refused: "not a plan", detail: (e as Error).message };
  }
}

// ---- the strict reader -------------------------------------------------------------------------------

type Check<T> = (v: unknown, at: string) => T;
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
const fail = (at: string, why: string): never => {
  throw plainError(`${at}: ${why}`);
};

/** An object with exactly these fields, each checked. */
function exactly<T>(fields: { [K in keyof T]: Check<T[K]> }): Check<T> {
  return (v, at) => {
    if (!isObject(v)) return fail(at, "expected an object");
    for (const k of Object.keys(v)) if (!Object.hasOwn(fields, k)) fail(`${at}.${k}`, "not a field of a plan file");
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(fields) as (keyof T & string)[]) {
      if (!Object.hasOwn(v, k)) fail(`${at}.${k}`, "missing");
      out[k] = fields[k](v[k], `${at}.${k}`);
    }
    return out as T;
  };
}
const text =
  (re: RegExp, what: string): Check<string> =>
  (v, at) =>
    typeof v === "string" && re.test(v) ? v : fail(at, `expected ${what}`);
const flag: Check<boolean> = (v, at) => (typeof v === "boolean" ? v : fail(at, "expected true or false"));
const list =
  <T>(item: Check<T>): Check<T[]> =>
  (v, at) =>
    Array.isArray(v) ? v.map((x, i) => item(x, `${at}[${i}]`)) : fail(at, "expected a list");

const ID = text(/^[A-Za-z0-9_]{1,100}$/, "an id");
const CIDR = text(/^[0-9a-f.:]{1,45}\/[0-9]{1,3}$/, "a canonical CIDR");
const ACTION = text(/^(allow|deny)$/, "allow or deny");
const DIGEST = text(/^[0-9a-f]{64}$/, "a digest (64 hex digits)");
const rule = exactly<FileRule>({ id: ID, cidr: CIDR, action: ACTION, texts: DIGEST });
/** A list of CIDRs exactly as access.ts writes a space: minimal, canonical, sorted, IPv4 first. */
const SPACE: Check<string[]> = (v, at) => {
  const cidrs = list(CIDR)(v, at);
  let space: string[] | undefined;
  try {
    const s = spaceOf(cidrs);
    space = [...s.v4, ...s.v6];
  } catch {
    // not CIDRs: refused below
  }
  const same = space !== undefined && canonical(space) === canonical(cidrs);
  return same ? cidrs : fail(at, "expected a minimal sorted list of canonical CIDRs");
};
const STEPS: Record<FileStep["op"], Check<FileStep>> = {
  create: exactly({
    op: text(/^create$/, "create"),
    to: exactly({ cidr: CIDR, action: ACTION, texts: DIGEST }),
  }) as Check<FileStep>,
  retext: exactly({ op: text(/^retext$/, "retext"), rule, to: exactly({ texts: DIGEST }) }) as Check<FileStep>,
  move: exactly({ op: text(/^move$/, "move"), rule, to: exactly({ cidr: CIDR, texts: DIGEST }) }) as Check<FileStep>,
  flip: exactly({
    op: text(/^flip$/, "flip"),
    rule,
    to: exactly({ action: ACTION, texts: DIGEST }),
  }) as Check<FileStep>,
  delete: exactly({ op: text(/^delete$/, "delete"), rule }) as Check<FileStep>,
};
const step: Check<FileStep> = (v, at) => {
  const op = isObject(v) ? v.op : undefined;
  if (typeof op === "string" && Object.hasOwn(STEPS, op)) return STEPS[op as FileStep["op"]](v, at);
  return fail(`${at}.op`, "expected create, retext, move, flip or delete");
};
const set = exactly<FileSet>({
  policy: text(/^([A-Za-z0-9_]{1,100})?$/, "a policy id"),
  known: flag,
  refreshed: flag,
  from: list(rule),
  declared: list(exactly<FileDeclared>({ cidr: CIDR, action: ACTION, texts: DIGEST })),
  steps: list(step),
  takesOver: flag,
  taken: list(ID),
  access: exactly<FileAccess>({ opens: SPACE, closes: SPACE }),
});
const URN = text(/^urn:pulumi:\S{1,2000}$/, "a URN");
const sets: Check<Record<string, FileSet>> = (v, at) => {
  if (!isObject(v)) return fail(at, "expected an object");
  const out: Record<string, FileSet> = {};
  for (const [urn, s] of Object.entries(v)) out[URN(urn, `${at} key`)] = set(s, `${at}[${JSON.stringify(urn)}]`);
  return out;
};
/** The plan a file holds, every field checked: a missing, extra or malformed one anywhere throws, naming it. */
export const planFile: Check<PlanFile> = exactly<PlanFile>({
  format: text(new RegExp(`^${FORMAT}$`), FORMAT) as Check<typeof FORMAT>,
  keyId: text(/^[0-9a-f]{16}$/, "a key id (16 hex digits)"),
  nonce: text(/^[0-9a-f]{32}$/, "a nonce (32 hex digits)"),
  command: text(/^[0-9]*-[0-9]*$/, "pid-start"),
  written: text(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, "a time"),
  sets,
  mac: DIGEST,
});

// ---- digests bound to their rule ------------------------------------------------------------------

/** What a set's digests are bound to: the file's keys and nonce, and the set's policy. */
export interface Binding {
  keys: PlanKeys;
  nonce: string;
  policy: string;
}

const bound = (b: Binding, parts: unknown[]) =>
  createHmac("sha256", b.keys.digest)
    .update(canonical([b.nonce, b.policy, ...parts]))
    .digest("hex");

export const bindRule = (b: Binding, r: RuleSeen): FileRule => ({
  id: r.id,
  cidr: r.cidr,
  action: r.action,
  texts: bound(b, ["rule", r.id, r.cidr, r.action, r.texts]),
});
export const bindDeclared = (b: Binding, d: Omit<RuleSeen, "id">): FileDeclared => ({
  cidr: d.cidr,
  action: d.action,
  texts: bound(b, ["declared", d.cidr, d.action, d.texts]),
});

/** A step's target texts, bound to the step (op, rule, the CIDR and action it leaves). */
const bindTarget = (b: Binding, op: string, rule: RuleSeen | undefined, cidr: string, action: string, texts: string) =>
  bound(b, ["to", op, rule?.id ?? "", cidr, action, texts]);

/** Whether a value of a promise was not known at preview (UNKNOWN_VALUE somewhere in it). */
const unknownIn = (v: unknown): boolean =>
  isUnknownValue(v) || (v !== null && typeof v === "object" && Object.values(v).some(unknownIn));

/** A step of a preview in the file's terms; undefined when it holds a value not known at preview. */
export function bindStep(b: Binding, s: StepSeen): FileStep | undefined {
  if (unknownIn(s)) return undefined;
  const rule = s.rule ? bindRule(b, s.rule) : undefined;
  const to = s.to as { cidr?: string; action?: string; texts: string } | undefined;
  if (s.op === "delete") return { op: "delete", rule: rule! };
  const cidr = to!.cidr ?? s.rule!.cidr;
  const action = to!.action ?? s.rule!.action;
  const texts = bindTarget(b, s.op, s.rule, cidr, action, to!.texts);
  switch (s.op) {
    case "create":
      return { op: "create", to: { cidr, action, texts } };
    case "retext":
      return { op: "retext", rule: rule!, to: { texts } };
    case "move":
      return { op: "move", rule: rule!, to: { cidr, texts } };
    case "flip":
      return { op: "flip", rule: rule!, to: { action, texts } };
  }
}

/** What a preview showed of a set, as the file holds it. */
export interface SetSeen {
  policy: string;
  from: RuleSeen[];
  declared?: Omit<RuleSeen, "id">[];
  shown: Shown;
  takeover?: string[] | Unknown;
  /** What the preview showed of access (a plan file's, read back: fileAccess; ignored when saving). */
  access?: FileAccess;
}

/** A set's plan in the file's terms; one with a value its preview did not know is kept as not known (no deploy). */
export function bindSet(b: Binding, s: SetSeen, refreshed: boolean): FileSet {
  const from = s.from.map((r) => bindRule(b, r));
  const nothing = { declared: [], steps: [], takesOver: false, taken: [], access: { opens: [], closes: [] } };
  const unknown: FileSet = { policy: b.policy, known: false, refreshed, from, ...nothing };
  if (!("steps" in s.shown) || !s.declared || unknownIn([s.declared, s.takeover, s.from])) return unknown;
  const steps = s.shown.steps.map((x) => bindStep(b, x));
  if (steps.some((x) => x === undefined)) return unknown;
  const taken = Array.isArray(s.takeover) ? (s.takeover as string[]) : [];
  const declared = s.declared.map((d) => bindDeclared(b, d));
  const takesOver = Array.isArray(s.takeover);
  // A takeover of rules writes nothing: its plan changes no access (of an empty policy, it creates the declared rules).
  const access = taken.length ? { opens: [], closes: [] } : fileAccess(s.from, s.declared);
  if (!access) return unknown;
  const plan = { declared, steps: steps as FileStep[], takesOver, taken, access };
  return { policy: b.policy, known: true, refreshed, from, ...plan };
}

/**
 * What a set's plan does to its policy's access: from the rules it was made from to the declared ones
 * (the preview's `access of …` line); undefined when that is not known (an action not allow or deny,
 * a text that is no CIDR). A file's `access` is this of its own rules (accessMatches).
 */
export function fileAccess(
  from: { cidr: string; action: string }[],
  declared: { cidr: string; action: string }[],
): FileAccess | undefined {
  const known = (rules: { action: string }[]) => rules.every((r) => r.action === "allow" || r.action === "deny");
  if (!known(from) || !known(declared)) return undefined;
  try {
    const change = accessChange(from as AccessRule[], declared as AccessRule[]);
    return { opens: [...change.opens.v4, ...change.opens.v6], closes: [...change.closes.v4, ...change.closes.v6] };
  } catch {
    return undefined;
  }
}

/** A file's access as the model's change. */
export const fileChange = (a: FileAccess): Change => ({ opens: spaceOf(a.opens), closes: spaceOf(a.closes) });

/** Whether a file's set says of access what its own rules do (a known set), or nothing (one not known). */
export function accessMatches(set: FileSet): boolean {
  const none: FileAccess = { opens: [], closes: [] };
  const expected = set.known && !set.taken.length ? (fileAccess(set.from, set.declared) ?? null) : none;
  return canonical(set.access) === canonical(expected);
}

/**
 * The steps of a file's set in the terms of this process's promise (promise.ts), given the rules as
 * this process sees them (already found equal, bound, to the file's): each digest back to the one it
 * was made from. One that matches nothing stays as it is, and so holds no step (fails closed).
 */
export function unbindSteps(
  b: Binding,
  steps: FileStep[],
  now: { from: RuleSeen[]; declared: Omit<RuleSeen, "id">[] },
): StepSeen[] {
  const byId = new Map(now.from.map((r) => [r.id, r]));
  const byCidr = new Map(now.declared.map((d) => [d.cidr, d]));
  const ruleBack = (r: FileRule): RuleSeen => {
    const mine = byId.get(r.id);
    return mine && bindRule(b, mine).texts === r.texts ? mine : r;
  };
  return steps.map((x): StepSeen => {
    const rule = "rule" in x ? ruleBack(x.rule) : undefined;
    if (x.op === "delete") return { op: x.op, rule };
    const to = x.to as { cidr?: string; action?: string; texts: string };
    const cidr = to.cidr ?? rule!.cidr;
    const action = to.action ?? rule!.action;
    const candidate = byCidr.get(cidr)?.texts;
    const back = candidate !== undefined && bindTarget(b, x.op, rule, cidr, action, candidate) === to.texts;
    const texts = back ? candidate : to.texts;
    return { op: x.op, ...(rule ? { rule } : {}), to: { ...to, texts } };
  });
}
