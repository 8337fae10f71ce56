// Pure: what an update of a set may write, decided between the fresh listing and the first write.
// The plan (plan.ts) says what brings the recorded rules to the declared ones; the guard takes out
// what the preview did not show, what another resource of this run manages, what would touch a
// rule that changed since it was recorded (then nothing is written at all), and what would open
// more than the preview showed now that the policy changed; it says what it left, and why, as typed
// values (messages.ts renders them). A destroy's decisions are here too (teardown), and one set per
// policy (oneSetOnPolicy, cameFirst). Everything read (the run record, the markers) is passed in as data.
import { AccessRule, accessChange, accessOf, canonicalCidr } from "../access";
import { intersect, isEmpty, Space, spaceOf, subtract } from "../access";
import { asDeclared } from "../fields";
import type { Marker } from "../ownership";
import { DeclaredRule, isUnknownValue, MEMBER_FIELDS } from "./declared";
import type { IpPolicyRuleSetMember } from "./live";
import { changeOpens, opens, phase, Plan, Step, stepRules } from "./plan";
import { covers, Shown, StepSeen } from "./promise";

type Member = IpPolicyRuleSetMember;

export interface Held {
  steps: Step[];
  /** The rules whose steps were left: they stay as they are. */
  kept: Member[];
  /** What was left undone. */
  left: LeftUndone[];
}

/** A step the preview did not show, left undone (`withTheDeny`: held back with a deny left undone). */
export interface LeftUndone {
  step: Step;
  withTheDeny?: true;
}

/**
 * The steps every promise holds (each what a preview showed: this command's, a saved plan's; none:
 * every step passes). A move not shown is made as the delete and the create that were shown, if any.
 * A deny left undone holds back everything that opens (an allow it would have carved stays out with it).
 */
export function holdToShown(p: Plan, promises: Shown[][], see: (s: Step) => StepSeen): Held {
  if (!promises.length) return { steps: p.steps, kept: [], left: [] };
  const kept: Member[] = [];
  const left: LeftUndone[] = [];
  let closingLeft = false;
  const promised = (s: Step) => promises.every((shown) => covers(shown, see(s)));
  const isShown = (s: Step) => promised(s) || (left.push({ step: s }), false);
  const of = <O extends Step["op"]>(op: O) => p.steps.filter((s): s is Extract<Step, { op: O }> => s.op === op);
  const steps: Step[] = [];
  for (const s of of("create"))
    if (isShown(s)) steps.push(s);
    else closingLeft ||= s.to.action === "deny";
  const deleteOrKeep = (rule: Member) =>
    isShown({ op: "delete", rule }) ? steps.push({ op: "delete", rule }) : kept.push(rule);
  for (const s of of("delete")) deleteOrKeep(s.rule);
  for (const s of of("flip")) {
    if (isShown(s)) steps.push(s);
    else {
      kept.push(s.rule);
      closingLeft ||= s.to.action === "deny";
    }
  }
  for (const s of [...of("retext"), ...of("move")]) {
    if (promised(s)) steps.push(s);
    else if (s.op === "retext") {
      left.push({ step: s });
      kept.push(s.rule);
    } else if (s.op === "move") {
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
  const holding = (s: Step) => (left.push({ step: s, withTheDeny: true }), "rule" in s && kept.push(s.rule), false);
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
  /** A step in the promise's terms (pure: a keyed digest of its texts). */
  see: (s: Step) => StepSeen;
  /** Rules (ids) another resource of this run manages (an IpPolicyRule in a handover): neither deleted nor moved. */
  claimedElsewhere: ReadonlySet<string>;
  /** The markers of rules other stacks' resources made, that verify (ownership.ts), by id: never touched. */
  othersOf: ReadonlyMap<string, Marker>;
  /** Rules (ids) whose marker names another stack, verified or not: ACCESSCTL_ADOPT_EXISTING never takes them. */
  claimedByOther?: ReadonlySet<string>;
  /** ACCESSCTL_ADOPT_EXISTING=1: a rule exactly as declared on a CIDR to add is taken over. */
  adoptExisting: boolean;
  /**
   * Rules (ids) not recorded that the refresh of this command's preview found as they are now
   * (another stack's, named there): the preview counted on them.
   */
  previewSaw: ReadonlySet<string>;
  /** What a reviewed plan's file says its preview showed opening (plan-file.ts FileAccess): a bound as shownOpening. */
  planOpens?: Space;
}

/**
 * Why nothing may be written: a CIDR the plan adds is held by a rule no preview showed (another
 * stack's, one not recorded, or a recorded one moved there), or a rule the plan touches changed.
 */
export type Refusal =
  | { kind: "cidrHeld"; rule: Member; by: "otherStack"; maker: Marker }
  | { kind: "cidrHeld"; rule: Member; by: "notRecorded" | "movedThere" }
  | { kind: "changed"; rule: Member; now: Member | undefined };

/** A step on a rule that is not the set's to touch, left (`maker`: another stack's, its marker verified). */
export interface Withheld {
  step: Step;
  maker?: Marker;
}

/** Why steps that open were held back. */
export type HoldReason =
  | { kind: "unexpectedAllow" }
  | { kind: "denyLost" }
  | { kind: "opensUnshown"; opens: Space }
  | { kind: "notComputable"; error: string };

/** A recorded rule changed by hand where the plan does nothing (`now` undefined: deleted). */
export interface ChangedByHand {
  rule: Member;
  now: Member | undefined;
}

export interface Decision {
  /** The steps to make. */
  steps: Step[];
  /** Why nothing may be written (any: nothing is). */
  refused: Refusal[];
  /** Steps on rules another resource of this run, or another stack, manages, left. */
  withheld: Withheld[];
  /** Steps the preview did not show, left undone. */
  leftUndone: LeftUndone[];
  /** Steps held back as they would open more than the preview showed, and why. */
  heldBack: Step[];
  heldBecause: HoldReason[];
  /** Rules taken over exactly as declared (ACCESSCTL_ADOPT_EXISTING). */
  adopted: Member[];
  /** Rules of the policy the state does not know (added by hand, or another stack's): left, not recorded. */
  strangers: Member[];
  /** Those of them another stack's resources made, each with its maker (their markers say so). */
  others: { rule: Member; maker: Marker }[];
  /** Recorded rules changed by hand where the plan does nothing: recorded as they are now. */
  changedByHand: ChangedByHand[];
}

/** Two versions of one rule (by id) that hold the same: nothing was changed by hand between them. */
export const unchanged = (a: Member, b: Member | undefined) =>
  b !== undefined && canonicalCidr(a.cidr) === canonicalCidr(b.cidr) && asDeclared(MEMBER_FIELDS, b, a);

/** A rule exactly as declared: what an interrupted run of this stack can have made. */
export function exactlyAsDeclared(declared: DeclaredRule[], r: Member): boolean {
  const d = declared.find((x) => x.cidr === canonicalCidr(r.cidr));
  return d !== undefined && asDeclared(MEMBER_FIELDS, r, d);
}

/**
 * ACCESSCTL_ADOPT_EXISTING=1 takes a rule exactly as declared: what an interrupted run of this stack
 * can have made; never one whose marker names another stack (`theirs`: verified or not, a claim that
 * does not verify contradicts the say-so all the same).
 */
export function adoptableRule(
  r: Member,
  o: { adoptExisting: boolean; declared: DeclaredRule[]; theirs: ReadonlySet<string> },
): boolean {
  return o.adoptExisting && !o.theirs.has(r.id) && exactlyAsDeclared(o.declared, r);
}

/**
 * What is not the set's to touch: a rule another resource of this run manages is neither deleted nor
 * moved; a rule another stack's resource made is not touched at all. A move of either becomes a
 * create of its target.
 */
function withhold(p: Plan, s: Pick<Situation, "claimedElsewhere" | "othersOf">) {
  const kept: Member[] = [];
  const withheld: Withheld[] = [];
  const steps = p.steps.flatMap((x): Step[] => {
    if (x.op === "create") return [x];
    const other = s.othersOf.get(x.rule.id);
    if (!other && ((x.op !== "delete" && x.op !== "move") || !s.claimedElsewhere.has(x.rule.id))) return [x];
    kept.push(x.rule);
    withheld.push(other ? { step: x, maker: other } : { step: x });
    return x.op === "move" ? [{ op: "create", to: x.to }] : [];
  });
  return { plan: { steps } as Plan, kept, withheld };
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
  const theirs = new Set([...s.othersOf.keys(), ...(s.claimedByOther ?? [])]);
  const adoptable = (r: Member | undefined): r is Member =>
    r !== undefined && !known[r.id] && adoptableRule(r, { ...s, theirs });

  const touched = held.steps.flatMap((x) =>
    x.op === "create" || (x.op === "delete" && !live[x.rule.id]) ? [] : [x.rule],
  );
  const stale = touched
    .filter((r) => !unchanged(r, live[r.id]))
    .map((rule): Refusal => ({ kind: "changed", rule, now: live[rule.id] }));
  const targets = held.steps.flatMap((x) => (x.op === "create" || x.op === "move" ? [x.to] : []));
  const taken = targets.map((d) => holder[d.cidr]).filter((r): r is Member => r !== undefined && !adoptable(r));
  const whose = (rule: Member): Refusal => {
    const maker = s.othersOf.get(rule.id);
    return maker ? { kind: "cidrHeld", rule, by: "otherStack", maker } : { kind: "cidrHeld", rule, by: "notRecorded" };
  };
  const unseen = [
    ...taken.filter((r) => !known[r.id]).map(whose),
    ...taken.filter((r) => known[r.id]).map((rule): Refusal => ({ kind: "cidrHeld", rule, by: "movedThere" })),
  ];
  const refused = [...unseen, ...stale];

  // Rules taken over need nothing more; a rule the plan moved onto a CIDR so taken leaves its old
  // CIDR all the same: it is deleted.
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
  const changedByHand = changedRules.map((rule): ChangedByHand => ({ rule, now: live[rule.id] }));
  const strangers = s.live.filter((r) => !known[r.id] && !adopted.includes(r));
  const others = strangers.flatMap((rule) => {
    const maker = s.othersOf.get(rule.id);
    return maker ? [{ rule, maker }] : [];
  });
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
interface Unplanned {
  kept: Member[];
  live: Record<string, Member>;
  changedRules: Member[];
  strangers: Member[];
  planned: Record<string, true>;
}

function holdBack(steps: Step[], s: Situation, c: Unplanned) {
  const changedNow = c.changedRules.filter((r) => c.live[r.id]).map((r) => c.live[r.id]);
  const unseenStrangers = c.strangers.filter((r) => !s.previewSaw.has(r.id));
  // A rule there that the plan did not count on, which may open beside the others (an allow);
  // a deny whose change may open.
  const unplanned = [...c.kept.flatMap((r) => [r, c.live[r.id]]), ...changedNow, ...unseenStrangers];
  const unexpectedAllow = unplanned.some((r) => r && changeOpens([], [r]));
  const lost = (r: Member) => r.action === "deny" && changeOpens([r], c.live[r.id] ? [c.live[r.id]] : []);
  const denyLost = s.recorded.some((r) => !c.planned[r.id] && lost(r));
  const held: Step[] = [];
  const because: HoldReason[] = [
    ...(unexpectedAllow ? [{ kind: "unexpectedAllow" } as const] : []),
    ...(denyLost ? [{ kind: "denyLost" } as const] : []),
  ];
  const holds = (x: Step) => opens(x) && (denyLost || (unexpectedAllow && x.op === "delete"));
  // Deletes named first, as they are checked first.
  const order = (x: Step) => (x.op === "delete" ? 0 : x.op === "create" ? 1 : x.op === "move" ? 2 : 3);
  for (const x of [...steps].sort((a, b) => order(a) - order(b))) if (holds(x)) held.push(x);
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
  const fromPreviews = shownOpening(
    s.promises,
    s.recorded,
    s.declared,
    strangers.filter((r) => s.previewSaw.has(r.id)),
  );
  const shown = fromPreviews && s.planOpens ? intersect(fromPreviews, s.planOpens) : (fromPreviews ?? s.planOpens);
  if (!shown || !steps.some(opens)) return { steps, held: [] as Step[], because: [] as HoldReason[] };
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
  const because: HoldReason[] = unshown.length ? [{ kind: "opensUnshown", opens: spaceOf(unshown) }] : [];
  return { steps: steps.filter((x) => !held.has(x)), held: steps.filter((x) => held.has(x)), because };
}

/** holdToShownOpening; when a CIDR is one the model cannot read, every step that opens is held back (fail safe). */
function holdOpeningSafely(steps: Step[], s: Situation, strangers: Member[]) {
  try {
    return holdToShownOpening(steps, s, strangers);
  } catch (e) {
    const held = steps.filter(opens);
    const because: HoldReason[] = [{ kind: "notComputable", error: (e as Error).message }];
    return { steps: steps.filter((x) => !held.includes(x)), held, because };
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

// ---- what a refresh saw ---------------------------------------------------------------------------

/**
 * What a refresh found against the rules the state recorded: one value, which the refresh's words
 * report (messages.ts driftWords) and the run record keeps for the update and destroy of the command.
 */
export interface RefreshSaw {
  added: Member[];
  changed: { was: Member; now: Member }[];
  /** Recorded rules gone (not those another stack's marker now shows as its own: they are `others`). */
  deleted: Member[];
  /** Rules other stacks' resources made (their markers verify, or are pending until `pending`): left, not recorded. */
  others: { rule: Member; maker: Marker; pending?: string }[];
}

/** What a refresh of the policy's `rules` (other stacks' apart: `others`) saw against `recorded`. */
export function refreshSaw(recorded: Member[], rules: Member[], others: RefreshSaw["others"]): RefreshSaw {
  const before = byId(recorded);
  const now = byId(rules);
  return {
    added: rules.filter((r) => !before[r.id]),
    changed: rules
      .filter((r) => before[r.id] && !unchanged(before[r.id], r))
      .map((now) => ({ was: before[now.id], now })),
    deleted: Object.values(before).filter((r) => !now[r.id] && !others.some((o) => o.rule.id === r.id)),
    others,
  };
}

/** The rules a refresh found as no preview before it could have: added, changed, another stack's. */
export const foundRules = (s: RefreshSaw) => [
  ...s.added,
  ...s.changed.map((c) => c.now),
  ...s.others.map((o) => o.rule),
];

// ---- a destroy -------------------------------------------------------------------------------------

/** What a destroy of a set found (other stacks' rules, their markers verified, already taken out of `live`). */
export interface Ending {
  /** The rules the state records, as it records them. */
  recorded: Member[];
  /** The policy's rules now, other stacks' left out. */
  live: Member[];
  /** Rules (ids) an IpPolicyRule of this run took over (adoptId: the set's rules moved into rule resources). */
  handedOver: ReadonlySet<string>;
  /** Rules (ids) the refresh after this command's preview found added or changed: no preview showed them. */
  unshown: ReadonlySet<string>;
}

/** A destroy deletes nothing (a rule changed since recorded; an allow no preview showed), or deletes `steps`. */
export type Teardown =
  | { kind: "refused"; because: "changed"; rules: { was: Member; now: Member }[] }
  | { kind: "refused"; because: "unshownAllow"; rules: Member[] }
  | { kind: "delete"; steps: Step[]; kept: Member[]; handedOver: Member[] };

/**
 * What a destroy deletes: the rules the state knows, as it knows them. One changed since is not
 * deleted unseen (refresh first); one that came since (or that the refresh after this command's
 * preview found) is left, and named: a deny left closes; an allow left would stay open with nothing
 * managing it, so then nothing is deleted. A rule an IpPolicyRule of this run took over is its own.
 */
export function teardown(e: Ending): Teardown {
  const known = byId(e.recorded);
  const handedOver = e.live.filter((r) => e.handedOver.has(r.id));
  const rest = e.live.filter((r) => !e.handedOver.has(r.id));
  const changed = rest
    .filter((r) => known[r.id] && !unchanged(known[r.id], r))
    .map((now) => ({ was: known[now.id], now }));
  if (changed.length) return { kind: "refused", because: "changed", rules: changed };
  const ours = (r: Member) => !!known[r.id] && !e.unshown.has(r.id);
  const kept = rest.filter((r) => !ours(r));
  const open = kept.filter((r) => r.action !== "deny");
  if (open.length) return { kind: "refused", because: "unshownAllow", rules: open };
  const steps = rest.filter(ours).map((rule): Step => ({ op: "delete", rule }));
  return { kind: "delete", steps, kept, handedOver };
}

// ---- a takeover ----------------------------------------------------------------------------------

/**
 * What a takeover takes of the policy's rules (`current`): only what every preview it holds to listed
 * (this command's; a saved plan's), each the ids it listed or "any" (not known then, or no preview
 * to hold to). A rule added since is no one's to take unseen: its destroy would delete it.
 */
export function takenOver(current: Member[], listed: (ReadonlySet<string> | "any")[]): Member[] {
  return current.filter((r) => listed.every((ids) => ids === "any" || ids.has(r.id)));
}

// ---- one set per policy ------------------------------------------------------------------------

/**
 * Pure: whether a set whose rules are `mine` came to a policy before another set whose rules are
 * `theirs`: its earliest rule was made first (by the service's created_at; the smaller id when two
 * were made at the same moment). Both sets see the same rules, so both decide alike.
 */
export function cameFirst(mine: Member[], theirs: Member[]): boolean {
  const at = (r: Member) => Date.parse(r.createdAt);
  const before = (a: Member, b: Member) => at(a) < at(b) || (at(a) === at(b) && a.id < b.id);
  const first = (rules: Member[]) =>
    rules.reduce<Member | undefined>((a, r) => (!a || before(r, a) ? r : a), undefined);
  const [m, t] = [first(mine), first(theirs)];
  return !m || !t || before(m, t);
}

/** Another stack's set on the policy, by the markers of its rules: the makers named. */
export interface OtherSet {
  rule: Member;
  maker: Marker;
}

/**
 * A policy has one set. Where other stacks' sets have rules (`otherSets`), this set goes on only if
 * it has rules there (`mine`; none: a new set's create, or one whose create failed before its first
 * rule) and its earliest came first. Returns the sets it yields to, or undefined: it goes on.
 */
export function oneSetOnPolicy(mine: Member[], otherSets: OtherSet[]): OtherSet[] | undefined {
  if (!otherSets.length) return undefined;
  return mine.length &&
    cameFirst(
      mine,
      otherSets.map((o) => o.rule),
    )
    ? undefined
    : otherSets;
}
