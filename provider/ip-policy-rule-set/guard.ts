// Pure: what an update of a set may write, decided between the fresh listing and the first write.
// The plan (plan.ts) says what brings the recorded rules to the declared ones; the guard takes out
// what the preview did not show, what another resource of this run manages, what would touch a
// rule that changed since it was recorded (then nothing is written at all), and what would open
// more than the preview showed now that the policy changed; it says what it left, and why.
import { AccessRule, accessChange, accessOf, canonicalCidr, describeSpace } from "../access";
import { intersect, isEmpty, Space, spaceOf, subtract } from "../access";
import { asDeclared } from "../fields";
import { makerName, Marker } from "../ownership";
import { DeclaredRule, isUnknownValue, MEMBER_FIELDS } from "./declared";
import { IpPolicyRuleSetMember, named } from "./live";
import { changeOpens, opens, phase, Plan, Step, stepRules, texts } from "./plan";
import { covers, Shown, StepSeen } from "./promise";

type Member = IpPolicyRuleSetMember;

/** A step in words, as the reports name it: `create 10.0.0.0/8 allow`, `delete 10.5.0.0/16 deny (ipr_…)`. */
export function say(s: Step): string {
  switch (s.op) {
    case "create":
      return `create ${s.to.cidr} ${s.to.action}`;
    case "delete":
      return `delete ${named(s.rule)}`;
    case "flip":
      return `${s.rule.action} → ${s.to.action} ${named(s.rule)}`;
    case "retext":
      return `update ${named(s.rule)}`;
    case "move":
      return `move ${named(s.rule)} → ${s.to.cidr}`;
  }
}

export interface Held {
  steps: Step[];
  /** The rules whose steps were left: they stay as they are. */
  kept: Member[];
  /** What was left undone, in words. */
  left: string[];
}

/**
 * The steps every promise holds (each what a preview showed: this command's, a saved plan's; none:
 * every step passes). A move not shown is made as the delete and the create that were shown, if any.
 * A deny left undone holds back everything that opens (an allow it would have carved stays out with it).
 */
export function holdToShown(p: Plan, promises: Shown[][], see: (s: Step) => StepSeen): Held {
  if (!promises.length) return { steps: p.steps, kept: [], left: [] };
  const kept: Member[] = [];
  const left: string[] = [];
  let closingLeft = false;
  const promised = (s: Step) => promises.every((shown) => covers(shown, see(s)));
  const isShown = (s: Step) => promised(s) || (left.push(say(s)), false);
  const of = <O extends Step["op"]>(op: O) => p.steps.filter((s): s is Extract<Step, { op: O }> => s.op === op);
  const steps: Step[] = [];
  for (const s of of("create")) if (isShown(s)) steps.push(s); else closingLeft ||= s.to.action === "deny";
  const deleteOrKeep = (rule: Member) => (isShown({ op: "delete", rule }) ? steps.push({ op: "delete", rule }) : kept.push(rule));
  for (const s of of("delete")) deleteOrKeep(s.rule);
  for (const s of of("flip")) if (isShown(s)) steps.push(s); else (kept.push(s.rule), (closingLeft ||= s.to.action === "deny"));
  for (const s of [...of("retext"), ...of("move")]) {
    if (promised(s)) steps.push(s);
    else if (s.op === "retext") (left.push(say(s)), kept.push(s.rule));
    else if (s.op === "move") {
      deleteOrKeep(s.rule);
      const create: Step = { op: "create", to: s.to };
      if (isShown(create)) steps.push(create);
    }
  }
  // In the plan's order: a move made as its delete and create takes the move's place.
  const index = new Map<unknown, number>();
  p.steps.forEach((x, i) => ("to" in x && index.set(x.to, i), "rule" in x && index.set(x.rule, i)));
  const at = (x: Step) => index.get("rule" in x ? x.rule : x.to) ?? 0;
  steps.sort((a, b) => at(a) - at(b));
  if (!closingLeft) return { steps, kept, left };
  const holding = (s: Step) => (left.push(`${say(s)} (held back with the deny)`), "rule" in s && kept.push(s.rule), false);
  return { steps: steps.filter((s) => !opens(s) || holding(s)), kept, left };
}

export interface Situation {
  /** The rules the state records, which the plan was made from. */
  recorded: Member[];
  declared: DeclaredRule[];
  /** The policy's rules as listed now (a recorded one missing from the list confirmed gone by its own 404). */
  live: Member[];
  /** What previews showed that this update holds to: this command's, a saved plan's (none: nothing to hold to). */
  promises: Shown[][];
  /** A step in the promise's terms. */
  see: (s: Step) => StepSeen;
  /** A rule another resource of this run manages (an IpPolicyRule in a handover): the set neither deletes nor moves it. */
  claimedElsewhere: (id: string) => boolean;
  /** The marker of a rule another stack's resource made, when it verifies (ownership.ts): the set never touches it. */
  othersOf: (id: string) => Marker | undefined;
  /** Whether a rule's marker names another stack, verified or not: ACCESSCTL_ADOPT_EXISTING never takes it. */
  claimedByOther?: (id: string) => boolean;
  /** ACCESSCTL_ADOPT_EXISTING=1: a rule exactly as declared on a CIDR to add is taken over. */
  adoptExisting: boolean;
  /** A rule not recorded that the refresh of this command's preview found as it is now (another stack's, named there): the preview counted on it. */
  previewSaw: (r: Member) => boolean;
  /** Texts are secret: messages show `[secret]`. */
  secret: boolean;
  /** What a reviewed plan's file says its preview showed opening (plan-file.ts FileAccess): a bound as shownOpening. */
  planOpens?: Space;
}

export interface Decision {
  /** The steps to make. */
  steps: Step[];
  /** Why nothing may be written: a rule the plan touches changed since it was recorded, a CIDR it adds is held by a rule no preview showed. */
  refused: string[];
  /** Steps on rules another resource of this run manages, left. */
  withheld: string[];
  /** Steps the preview did not show, left undone. */
  leftUndone: string[];
  /** Steps held back as they would open more than the preview showed, and why. */
  heldBack: string[];
  heldBecause: string[];
  /** Rules taken over exactly as declared (ACCESSCTL_ADOPT_EXISTING). */
  adopted: Member[];
  /** Rules of the policy the state does not know (added by hand, or another stack's): left, not recorded. */
  strangers: Member[];
  /** Those of them another stack's resources made, each with its maker (their markers say so). */
  others: { rule: Member; maker: Marker }[];
  /** Recorded rules changed by hand where the plan does nothing: recorded as they are now. */
  changedByHand: string[];
}

/** Two versions of one rule (by id) that hold the same: nothing was changed by hand between them. */
export const unchanged = (a: Member, b: Member | undefined) => b !== undefined && canonicalCidr(a.cidr) === canonicalCidr(b.cidr) && asDeclared(MEMBER_FIELDS, b, a);

/** A rule exactly as declared: what an interrupted run of this stack can have made. */
export function exactlyAsDeclared(declared: DeclaredRule[], r: Member): boolean {
  const d = declared.find((x) => x.cidr === canonicalCidr(r.cidr));
  return d !== undefined && asDeclared(MEMBER_FIELDS, r, d);
}

/**
 * What is not the set's to touch: a rule another resource of this run manages is neither deleted nor
 * moved; a rule another stack's resource made is not touched at all. A move of either becomes a
 * create of its target.
 */
function withhold(p: Plan, s: Pick<Situation, "claimedElsewhere" | "othersOf">): { plan: Plan; kept: Member[]; withheld: string[] } {
  const kept: Member[] = [];
  const withheld: string[] = [];
  const steps = p.steps.flatMap((x): Step[] => {
    if (x.op === "create") return [x];
    const other = s.othersOf(x.rule.id);
    if (!other && ((x.op !== "delete" && x.op !== "move") || !s.claimedElsewhere(x.rule.id))) return [x];
    kept.push(x.rule);
    withheld.push(`${say(x)}${other ? ` (${makerName(other)}'s: its metadata says so)` : ""}`);
    return x.op === "move" ? [{ op: "create", to: x.to }] : [];
  });
  return { plan: { steps }, kept, withheld };
}

/** Everything an update decides between the listing and the first write. */
export function reconcile(p: Plan, s: Situation): Decision {
  const mine = withhold(p, s);
  const held = holdToShown(mine.plan, s.promises, s.see);
  const kept = [...mine.kept, ...held.kept];
  const live = byId(s.live);
  const known = byId(s.recorded);
  const holder: Record<string, Member> = {};
  for (const r of s.live) holder[canonicalCidr(r.cidr)] = r;
  // ACCESSCTL_ADOPT_EXISTING=1 takes what an interrupted run of this stack can have made: never a rule
  // another stack's marker names (a claim that does not verify contradicts the say-so all the same).
  const theirs = (id: string) => !!s.othersOf(id) || !!s.claimedByOther?.(id);
  const adoptable = (r: Member | undefined): r is Member =>
    r !== undefined && !known[r.id] && s.adoptExisting && !theirs(r.id) && exactlyAsDeclared(s.declared, r);

  const touched = held.steps.flatMap((x) => (x.op === "create" || (x.op === "delete" && !live[x.rule.id]) ? [] : [x.rule]));
  const stale = touched.filter((r) => !unchanged(r, live[r.id])).map((r) => `${named(r)} (${live[r.id] ? `now ${named(live[r.id])}${texts(live[r.id], s.secret)}` : "deleted"})`);
  const targets = held.steps.flatMap((x) => (x.op === "create" || x.op === "move" ? [x.to] : []));
  const taken = targets.map((d) => holder[d.cidr]).filter((r): r is Member => r !== undefined && !adoptable(r));
  const whose = (r: Member) => (s.othersOf(r.id) ? `${makerName(s.othersOf(r.id)!)}'s: its metadata says so` : "not recorded: added since the last refresh, by hand or by another stack");
  const unseen = [
    ...taken.filter((r) => !known[r.id]).map((r) => `${named(r)} (${whose(r)})`),
    ...taken.filter((r) => known[r.id]).map((r) => `${named(r)} (moved there since it was recorded)`),
  ];
  const refused = [...unseen, ...stale];

  // Rules taken over need nothing more; a rule the plan moved onto a CIDR so taken leaves its old CIDR all the same: it is deleted.
  const adopted = targets.map((d) => holder[d.cidr]).filter(adoptable);
  const steps = held.steps.flatMap((x): Step[] => {
    if (x.op === "create") return holder[x.to.cidr] ? [] : [x];
    if (x.op === "move" && holder[x.to.cidr]) return live[x.rule.id] ? [{ op: "delete", rule: x.rule }] : [];
    if (x.op === "delete") return live[x.rule.id] ? [x] : []; // gone already: nothing to do
    return [x];
  });
  const planned: Record<string, true> = {};
  for (const x of held.steps) if ("rule" in x) planned[x.rule.id] = true;
  const changedRules = s.recorded.filter((r) => !planned[r.id] && !unchanged(r, live[r.id]));
  const changedByHand = changedRules.map((r) => (live[r.id] ? `${named(r)}, now ${named(live[r.id])}${texts(live[r.id], s.secret)}` : `${named(r)}, deleted`));
  const strangers = s.live.filter((r) => !known[r.id] && !adopted.includes(r));
  const others = strangers.flatMap((rule) => (s.othersOf(rule.id) ? [{ rule, maker: s.othersOf(rule.id)! }] : []));
  const first = holdBack(steps, s, { kept, live, changedRules, strangers, planned });
  const hold = holdOpeningSafely(first.steps, s, strangers);
  const heldBack = [...first.held, ...hold.held];
  const heldBecause = [...first.because, ...hold.because];
  const undone = { withheld: mine.withheld, leftUndone: held.left, heldBack, heldBecause };
  return { steps: hold.steps, refused, ...undone, adopted, strangers, others, changedByHand };
}

/**
 * Nothing opens more than the preview showed. A deny delete frees its range to every allow still
 * held: not while an allow the plan did not count on stays (left undone, changed, or added where no
 * preview of this command saw it).
 * What opens needs every deny the plan keeps: not while one of them is gone or changed so that it may
 * open (moved off part of its range, turned allow; a change of its text, or a move to a range that
 * holds its own, opens nothing: plan.ts changeOpens).
 */
function holdBack(steps: Step[], s: Situation, c: { kept: Member[]; live: Record<string, Member>; changedRules: Member[]; strangers: Member[]; planned: Record<string, true> }) {
  const changedNow = c.changedRules.filter((r) => c.live[r.id]).map((r) => c.live[r.id]);
  const unseenStrangers = c.strangers.filter((r) => !s.previewSaw(r));
  // A rule there that the plan did not count on, which may open beside the others (an allow);
  // a deny whose change may open.
  const unplanned = [...c.kept.flatMap((r) => [r, c.live[r.id]]), ...changedNow, ...unseenStrangers];
  const unexpectedAllow = unplanned.some((r) => r && changeOpens([], [r]));
  const lost = (r: Member) => r.action === "deny" && changeOpens([r], c.live[r.id] ? [c.live[r.id]] : []);
  const denyLost = s.recorded.some((r) => !c.planned[r.id] && lost(r));
  const held: string[] = [];
  const because = [unexpectedAllow ? "an allow rule the plan does not delete is there" : "", denyLost ? "a deny rule the plan keeps is gone, moved or turned allow" : ""].filter(Boolean);
  const holds = (x: Step) => opens(x) && (denyLost || (unexpectedAllow && x.op === "delete"));
  const order = (x: Step) => (x.op === "delete" ? 0 : x.op === "create" ? 1 : x.op === "move" ? 2 : 3); // deletes named first, as they are checked first
  for (const x of [...steps].sort((a, b) => order(a) - order(b))) if (holds(x)) held.push(say(x));
  return { steps: steps.filter((x) => !holds(x)), held, because };
}

/**
 * What the previews showed opening: allowed by the declared rules and not by the rules as the preview
 * saw them (those its steps touch, as it saw them; the others as recorded), beside the rules not
 * recorded that its refresh saw (`beside`: another stack's). Every promise bounds it; undefined: none
 * does (no preview, or one that did not know the rules or a CIDR).
 */
export function shownOpening(
  promises: Shown[][],
  recorded: Member[],
  declared: DeclaredRule[],
  beside: AccessRule[] = [],
): Space | undefined {
  const after = [...beside, ...declared.map((d): AccessRule => ({ cidr: d.cidr, action: actionOf(d.action) }))];
  let bound: Space | undefined;
  for (const shown of promises) {
    // A preview that did not know the rules, or a CIDR, bounds nothing.
    if (shown.some((x) => "anyOf" in x || x.steps.some((p) => isUnknownValue(p.to?.cidr)))) continue;
    const before = (x: Shown) => [...beside, ...previewBefore(x as { steps: StepSeen[] }, recorded)];
    const union = spaceOf(shown.flatMap((x) => cidrsOf(accessChange(before(x), after).opens)));
    bound = bound ? intersect(bound, union) : union;
  }
  return bound;
}

const cidrsOf = (s: Space) => [...s.v4, ...s.v6];
/** An action as the model reads it: one not known (or not read) may be allow. */
const actionOf = (a: unknown): AccessRule["action"] => (a === "deny" ? "deny" : "allow");

/** The rules a preview planned from: those its steps touch, as it saw them; the others as recorded. */
function previewBefore(x: { steps: StepSeen[] }, recorded: Member[]): AccessRule[] {
  const touched = new Set(x.steps.flatMap((p) => (p.rule ? [p.rule.id] : [])));
  const seen = x.steps.flatMap((p) => (p.rule ? [{ cidr: p.rule.cidr, action: actionOf(p.rule.action) }] : []));
  return [...recorded.filter((r) => !touched.has(r.id)), ...seen];
}

/**
 * Nothing an update writes opens, against the policy as the update found it, more than the preview
 * showed opening (shownOpening): the policy may have changed since the preview, by hand or by a run.
 * The steps run phase by phase (plan.ts phase(), several at once within one); for each phase, the most
 * it can allow at any moment (every allow it adds, none of the denies it removes) is checked, and a
 * step adding an allow or removing a deny over what would open unshown is held back. A reviewed plan's
 * file bounds it too, by the opening it records (planOpens).
 */
function holdToShownOpening(steps: Step[], s: Situation, strangers: Member[]) {
  const fromPreviews = shownOpening(s.promises, s.recorded, s.declared, strangers.filter(s.previewSaw));
  const shown = fromPreviews && s.planOpens ? intersect(fromPreviews, s.planOpens) : fromPreviews ?? s.planOpens;
  if (!shown || !steps.some(opens)) return { steps, held: [], because: [] };
  const held = new Set<Step>();
  const unshown: string[] = [];
  // The policy's rules as the phases leave them: by id (a rule made by a create: `+` and its CIDR).
  const now = new Map<string, AccessRule>(s.live.map((r) => [r.id, { cidr: r.cidr, action: r.action }]));
  const limit = spaceOf([accessOf([...now.values()]), shown].flatMap(cidrsOf));
  const added = (x: Step) => (x.op === "retext" ? [] : stepRules(x).after.filter((r) => r.action === "allow"));
  for (const p of [0, 1, 2, 3, 4]) {
    const batch = steps.filter((x) => phase(x) === p);
    // The most the phase can allow at a moment: every allow it adds, none of the denies it removes.
    const removedDenies = new Map<string, AccessRule>();
    for (const x of batch) {
      const r = "rule" in x && x.op !== "retext" ? now.get(x.rule.id) : undefined;
      if (r?.action === "deny") removedDenies.set((x as { rule: Member }).rule.id, r);
    }
    const kept = [...now].filter(([id]) => !removedDenies.has(id)).map(([, r]) => r);
    const excess = subtract(accessOf([...kept, ...batch.flatMap(added)]), limit);
    if (!isEmpty(excess)) {
      unshown.push(...cidrsOf(excess));
      for (const x of batch) {
        const deny = "rule" in x ? removedDenies.get(x.rule.id) : undefined;
        const own = [...added(x), ...(deny ? [deny] : [])].map((r) => r.cidr);
        if (own.length && !isEmpty(intersect(spaceOf(own), excess))) held.add(x);
      }
    }
    for (const x of batch) if (!held.has(x)) applyTo(now, x);
  }
  const opened = unshown.length ? describeSpace(spaceOf(unshown)) : "";
  const because = opened ? [`it would open ${opened}, which the preview did not show opening`] : [];
  return { steps: steps.filter((x) => !held.has(x)), held: steps.filter((x) => held.has(x)).map(say), because };
}

/** holdToShownOpening; when a CIDR is one the model cannot read, every step that opens is held back (fail safe). */
function holdOpeningSafely(steps: Step[], s: Situation, strangers: Member[]) {
  try {
    return holdToShownOpening(steps, s, strangers);
  } catch (e) {
    const held = steps.filter(opens);
    const because = [`what it would open cannot be computed (${(e as Error).message})`];
    return { steps: steps.filter((x) => !held.includes(x)), held: held.map(say), because };
  }
}

/** A step made on the policy's rules (`now`: by id). */
function applyTo(now: Map<string, AccessRule>, x: Step): void {
  if (x.op === "retext") return;
  if ("rule" in x) now.delete(x.rule.id);
  for (const r of stepRules(x).after) now.set("rule" in x ? x.rule.id : `+${r.cidr}`, r);
}

function byId(rules: Member[]): Record<string, Member> {
  const out: Record<string, Member> = {};
  for (const r of rules) out[r.id] = r;
  return out;
}
