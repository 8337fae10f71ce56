// What a preview showed of a set, as typed values: the promise an update holds to. `pulumi up`
// previews in one engine and updates in another, each with its own provider processes; what the
// preview's showed reaches the update's through the command's run record (../run-record.ts), and this
// file is the only user of that record for sets. A rule is kept there as the preview saw it (id,
// CIDR, action, and its texts as a digest keyed by the account's API key: no text, nothing a guess
// can reverse without the key); a step as the rule it touches and what it becomes, UNKNOWN_VALUE
// where the preview did not know a value (which holds any value at update).
import { createHmac } from "node:crypto";
import { connection, profileSource } from "../config";
import { canonicalCidr } from "../ip-policy-rule";
import { plainError } from "../errors";
import { addRecord, recordEngine, records, recordUnshared } from "../run-record";
import { processState } from "../state";
import { DeclaredRule, isUnknownValue, Unknown, UNKNOWN_VALUE } from "./declared";
import { IpPolicyRuleSetMember } from "./live";
import { Op, Step } from "./plan";
import { DeclaredSeen, savedPlanFor, SavedSet, savePlan, SetNow } from "./saved-plan";

/** A rule as a preview saw it. */
export interface RuleSeen {
  id: string;
  cidr: string;
  action: string;
  /** A digest of its description and metadata, keyed (see TextsDigest). */
  texts: string;
}

/**
 * What a step makes of its CIDR: the CIDR (create, move), the action
 * (create, flip), the texts; UNKNOWN_VALUE where not known at preview.
 */
export interface Target {
  cidr?: string | Unknown;
  action?: string | Unknown;
  texts?: string | Unknown;
}

/** A step as a preview showed it (or as an update is about to make it). */
export interface StepSeen {
  op: Op;
  rule?: RuleSeen;
  to?: Target;
}

/**
 * What a preview showed a set would do: its steps; or, when the declared rules were not known yet,
 * anything to the rules it listed and any create (`anyOf`).
 */
export type Shown = { steps: StepSeen[] } | { anyOf: RuleSeen[] };

/** Texts as a keyed digest: the same texts give the same digest in every process of one account's key. */
export type TextsDigest = (t: { description?: unknown; metadata?: unknown }) => string | Unknown;

export function textsDigest(key: string): TextsDigest {
  return (t) => {
    if (isUnknownValue(t.description) || isUnknownValue(t.metadata)) return UNKNOWN_VALUE;
    return keyedDigest(key, [t.description ?? "", t.metadata ?? ""]);
  };
}

/**
 * A value as a digest keyed with `key` (the account's API key):
 * equal values, equal digests; nothing to guess from without the key.
 */
export function keyedDigest(key: string, value: unknown): string {
  return createHmac("sha256", key).update(JSON.stringify(value)).digest("hex").slice(0, 32);
}

export function seenRule(r: IpPolicyRuleSetMember, digest: TextsDigest, cidr = r.cidr): RuleSeen {
  return { id: r.id, cidr, action: r.action, texts: digest(r) as string };
}

/** A step in the terms of a promise. */
export function seenStep(s: Step, digest: TextsDigest, canonical: (cidr: string) => string): StepSeen {
  const rule = "rule" in s ? seenRule(s.rule, digest, canonical(s.rule.cidr)) : undefined;
  if (s.op === "delete") return { op: s.op, rule };
  const to: Target = { texts: digest(s.to) };
  if (s.op === "create" || s.op === "move") to.cidr = s.to.cidr;
  if (s.op === "create" || s.op === "flip") to.action = s.to.action;
  return { op: s.op, ...(rule ? { rule } : {}), to };
}

const sameRule = (a: RuleSeen | undefined, b: RuleSeen | undefined) =>
  a === b || (!!a && !!b && a.id === b.id && a.cidr === b.cidr && a.action === b.action && a.texts === b.texts);
const fits = (promised: unknown, actual: unknown) =>
  isUnknownValue(promised) || JSON.stringify(promised) === JSON.stringify(actual);

const holds = (p: StepSeen, step: StepSeen) =>
  p.op === step.op &&
  sameRule(p.rule, step.rule) &&
  (["cidr", "action", "texts"] as const).every((k) => fits(p.to?.[k], step.to?.[k]));

/**
 * Whether what a preview showed holds `step`: the same step on the rule
 * as the preview saw it, to the same target (UNKNOWN_VALUE fits any).
 */
export function covers(shown: Shown[], step: StepSeen): boolean {
  return shown.some((s) => {
    if ("anyOf" in s)
      return (
        step.op === "create" ||
        (!!step.rule &&
          (indexOf(s).get(`r ${String(step.rule.id)}`) ?? []).some((r) => sameRule(r as RuleSeen, step.rule)))
      );
    // Only the steps that can hold it (by op and rule id; a create by its
    // CIDR, or any CIDR when the preview did not know it), each as before.
    const index = indexOf(s);
    const at = step.rule
      ? [`${step.op} r ${String(step.rule.id)}`]
      : [`${step.op} *`, ...(typeof step.to?.cidr === "string" ? [`${step.op} c ${step.to.cidr}`] : [])];
    return at.some((key) => (index.get(key) ?? []).some((p) => holds(p as StepSeen, step)));
  });
}

/**
 * What a preview showed, indexed for covers (an update asks of each of its steps: 5,000 steps against
 * 5,000 shown took 25 million comparisons): a step on a rule under its op and the rule's id, a create
 * under its CIDR (`*` when the preview did not know it); a rule of `anyOf` under its id. Made once per
 * value (a WeakMap of the process's).
 */
function indexOf(s: Shown): Map<string, (StepSeen | RuleSeen)[]> {
  const indexes = processState<WeakMap<Shown, Map<string, (StepSeen | RuleSeen)[]>>>(
    "set-shown-index",
    () => new WeakMap(),
  );
  let index = indexes.get(s);
  if (!index) {
    index = new Map();
    const add = (key: string, x: StepSeen | RuleSeen) => (index!.get(key) ?? index!.set(key, []).get(key)!).push(x);
    if ("anyOf" in s) for (const r of s.anyOf) add(`r ${String(r.id)}`, r);
    else
      for (const p of s.steps)
        add(
          p.rule
            ? `${p.op} r ${String(p.rule.id)}`
            : typeof p.to?.cidr === "string"
              ? `${p.op} c ${p.to.cidr}`
              : `${p.op} *`,
          p,
        );
    indexes.set(s, index);
  }
  return index;
}

// ---- the command's record ---------------------------------------------------------------------

interface ShownRecord {
  urn: string;
  shown: Shown;
}
interface TakeoverRecord {
  urn: string;
  /** The ids its preview listed (none: the listing failed), or UNKNOWN_VALUE: whatever the policy holds then. */
  rules: string[] | Unknown;
}
interface RefreshRecord {
  urn: string;
  /** Rules this refresh found added or changed, and other stacks' rules, as it found them. */
  found: RuleSeen[];
}

/** A preview (or the update's own diff) showed `shown` for the set `urn`. */
export function noteShown(urn: string, shown: Shown): void {
  addRecord<ShownRecord>("set-shown", { urn, shown });
}

/**
 * A takeover's preview listed these rules (recorded first with
 * none: a preview whose listing failed promised to take none).
 */
export function noteTakeoverShown(urn: string, rules: string[] | Unknown): void {
  addRecord<TakeoverRecord>("set-takeover", { urn, rules });
}

/** What the first plan shown for `urn` in this command showed, or undefined: none was shown. */
export function shownFor(urn: string | undefined): Shown[] | undefined {
  return urn === undefined ? undefined : firstShown<ShownRecord>("set-shown", urn)?.map((r) => r.shown);
}

/**
 * The rules a takeover's preview listed for `urn` in this command (UNKNOWN_VALUE: any), or undefined: it listed none.
 */
export function takeoverShownFor(urn: string | undefined): Set<string> | Unknown | undefined {
  const shown = urn === undefined ? undefined : firstShown<TakeoverRecord>("set-takeover", urn);
  if (!shown) return undefined;
  if (shown.some((r) => isUnknownValue(r.rules))) return UNKNOWN_VALUE;
  return new Set(shown.flatMap((r) => r.rules as string[]));
}

// The records of the first engine that showed one for `urn` whose promise no update has used yet (a
// `pulumi watch` runs several updates in one command: each holds to the plan shown before it). Marks it used.
function firstShown<T extends { urn: string }>(list: string, urn: string): T[] | undefined {
  const used = new Set(
    records<{ urn: string; engine: string }>(`${list}-used`)
      .filter((r) => r.value.urn === urn)
      .map((r) => r.value.engine),
  );
  const mine = records<T>(list).filter((r) => r.value.urn === urn);
  const first = mine.find((r) => !used.has(r.engine))?.engine;
  if (first === undefined) return undefined;
  addRecord(`${list}-used`, { urn, engine: first });
  return mine.filter((r) => r.engine === first).map((r) => r.value);
}

/** A refresh of `urn` in this engine found these rules added or changed. */
export function noteRefresh(urn: string, found: RuleSeen[]): void {
  addRecord<RefreshRecord>("set-refresh", { urn, found });
}

/**
 * What the refreshes of `urn` in this command found: this engine's, and the
 * preview's (the last other engine's before it; none: no preview refreshed).
 */
function refreshFindings(urn: string): { mine: RuleSeen[]; preview?: RuleSeen[] } {
  const me = recordEngine();
  const refreshes = records<RefreshRecord>("set-refresh").filter((r) => r.value.urn === urn);
  const preview = refreshes.filter((r) => r.engine !== me).pop()?.engine;
  const found = (engine: string) => refreshes.filter((r) => r.engine === engine).flatMap((r) => r.value.found);
  return { mine: found(me), preview: preview === undefined ? undefined : found(preview) };
}

/**
 * Ids of rules this engine's refresh found added or changed that the refresh of the engine before it
 * in this command (the preview's) did not: they came after the preview, which cannot have shown them.
 */
export function foundAfterPreview(urn: string | undefined): Set<string> {
  if (urn === undefined) return new Set();
  const { mine, preview } = refreshFindings(urn);
  if (preview === undefined) return new Set(); // no preview refreshed: this refresh's findings were the only ones
  // Each rule as that refresh found it: one changed again since is not seen.
  return new Set(mine.filter((rule) => !preview.some((s) => sameRule(s, rule))).map((rule) => rule.id));
}

/**
 * Whether the refresh of this command's preview found `rule` as it is
 * now (a rule the state does not record: another stack's, named there).
 */
export function previewRefreshSaw(urn: string | undefined): (rule: RuleSeen) => boolean {
  const seen = urn === undefined ? [] : (refreshFindings(urn).preview ?? []);
  return (rule) => seen.some((s) => sameRule(s, rule));
}

// ---- a set's promise, as its verbs use it ---------------------------------------------------------

/** The promise's terms for the account of a set's `profile`: texts by a digest keyed with its API key. */
export function promiseTerms(profile: unknown) {
  let key = "";
  try {
    key = connection(profileSource(profile)).apiKey;
  } catch {
    // no account configured: check has said so; a digest keyed with nothing still compares
  }
  const digest = textsDigest(key);
  return {
    digestOf: (value: unknown) => keyedDigest(key, value),
    see: (s: Step) => seenStep(s, digest, canonicalCidr),
    seeRule: (r: IpPolicyRuleSetMember) => seenRule(r, digest, canonicalCidr(r.cidr)),
    seeDeclared: (d: DeclaredRule): DeclaredSeen => ({
      cidr: d.cidr,
      action: d.action as string,
      texts: digest(d) as string,
    }),
  };
}

/** Whether a refresh of `urn` ran in this engine (`--refresh`, or `pulumi refresh`). */
function refreshedHere(urn: string | undefined): boolean {
  const me = recordEngine();
  return urn !== undefined && records<RefreshRecord>("set-refresh").some((r) => r.engine === me && r.value.urn === urn);
}

/**
 * A plan a set showed: noted for the update of this command, and saved in the plan file of a job
 * that saves one (ACCESSCTL_PLAN_SAVE); a job holding to one (ACCESSCTL_PLAN_HOLD) checks the file's at once.
 */
export async function showPlan(urn: string, set: SavedSet, what: string): Promise<void> {
  noteShown(urn, set.shown);
  const refreshed = refreshedHere(urn);
  await savePlan(urn, set, refreshed);
  // An up holding to a plan file that will refuse fails at its preview.
  savedPlanFor(urn, { policy: set.policy, from: set.from, declared: set.declared ?? [], refreshed }, what);
}

/**
 * What an operation holds to: this command's preview, and a saved
 * plan's (saved-plan.ts), checked against what it was made from.
 */
export function promisesFor(
  urn: string | undefined,
  now: Omit<SetNow, "refreshed">,
  what: string,
): { promises: Shown[][]; saved?: SavedSet } {
  const unshared = recordUnshared();
  if (unshared) {
    // Fail safe: with no way to know what the preview showed, nothing unseen may be written, so nothing is.
    throw plainError(
      `${what}: what this command's preview showed cannot reach its update (${unshared}); nothing was changed. ` +
        "Make that a directory only you can write (chmod 700), or set PULUMI_HOME to one, and run `pulumi up` again.",
    );
  }
  const saved = savedPlanFor(urn, { ...now, refreshed: refreshedHere(urn) }, what);
  const promises = [shownFor(urn), saved ? [saved.shown] : undefined].filter((p): p is Shown[] => p !== undefined);
  return { promises, saved };
}
