// Pure: the calls that bring the rules a set records to the rules it declares, as a list of typed
// steps, and the words a preview shows for them. The same function, with the same arguments, makes
// the plan a preview shows and the plan an update starts from (what the update then leaves out, and
// why, is guard.ts's to say). One definition of what opens a range, opens(), orders apply.ts's
// phases and guard.ts's hold-backs.
import { RULE_ACTIONS, RuleAction } from "../../contract/ip-policy-rule";
import { DiffKind } from "../fields";
import { processState } from "../state";
import {
  AccessRule,
  accessOf,
  Action,
  canonicalCidr,
  intersect,
  isEmpty,
  opensAny,
  parseCidr,
  spaceOf,
  subtract,
} from "../access";
import { DeclaredRule, isUnknownValue, MEMBER_FIELDS, Unknown } from "./declared";
import { IpPolicyRuleSetMember } from "./live";

type Member = IpPolicyRuleSetMember;
export type TextField = "description" | "metadata";
export const TEXT_FIELDS: readonly TextField[] = ["description", "metadata"];

/** One call or two, on one rule: each with the rule as recorded (`rule`) and what it becomes (`to`). */
export type Step =
  | { op: "create"; to: DeclaredRule }
  /** One PATCH of description and/or metadata. */
  | { op: "retext"; rule: Member; to: DeclaredRule }
  /** One PATCH of an allow rule's cidr (and texts), reusing it for a declared CIDR no rule holds. */
  | { op: "move"; rule: Member; to: DeclaredRule }
  /** The action changed: delete the rule, then create the CIDR with the new action (a policy holds a CIDR once). */
  | { op: "flip"; rule: Member; to: DeclaredRule }
  | { op: "delete"; rule: Member };

export type Op = Step["op"];

/** The steps, in the order a preview lists them: creates, retexts, moves, flips, deletes. */
export interface Plan {
  steps: Step[];
}

/** The requests a step makes. */
export const requestsOf = (s: Step) => (s.op === "flip" ? 2 : 1);

/**
 * The texts of a declared rule that differ from the rule's (one
 * not known yet counts as changed), by the rule's own table.
 */
export function changedTexts(r: Member, d: DeclaredRule): TextField[] {
  return TEXT_FIELDS.filter((k) => isUnknownValue(d[k]) || !MEMBER_FIELDS[k].same!(d[k], r[k]));
}

const sameAction = (r: Member, d: DeclaredRule) => !isUnknownValue(d.action) && d.action === r.action;

/**
 * The plan that brings `recorded` to `declared` (canonical CIDRs). A declared CIDR recorded with
 * another action is a flip; with other texts, a retext; not recorded, a create, unless an undeclared
 * allow rule is there to move (one PATCH of cidr; deny rules never move: a deny moved would open its
 * old range to the allow rules still held until the run ends, so the new one is created first and the
 * old deleted last). Every other undeclared rule is deleted. Pairs in the order given (CIDR order).
 */
export function plan(recorded: Member[], declared: DeclaredRule[]): Plan {
  const byCidr: Record<string, Member> = {};
  for (const r of recorded) byCidr[canonicalCidr(r.cidr)] = r;
  const wanted: Record<string, true> = {};
  const added: Record<string, DeclaredRule[]> = {};
  const retexts: Step[] = [];
  const flips: Step[] = [];
  const declaredBy: Record<string, DeclaredRule> = {};
  for (const d of declared) {
    wanted[d.cidr] = true;
    declaredBy[d.cidr] = d;
    const r = byCidr[d.cidr];
    if (!r) (added[isUnknownValue(d.action) ? "unknown" : d.action] ??= []).push(d);
    else if (!sameAction(r, d)) flips.push({ op: "flip", rule: r, to: d });
    else if (changedTexts(r, d).length) retexts.push({ op: "retext", rule: r, to: d });
  }
  const kept = recorded.filter((r) => {
    const d = declaredBy[canonicalCidr(r.cidr)];
    return d !== undefined && sameAction(r, d);
  });
  const removed: Record<string, Member[]> = {};
  for (const r of recorded) if (!wanted[canonicalCidr(r.cidr)]) (removed[r.action] ??= []).push(r);
  const creates: Step[] = [];
  const moves: Step[] = [];
  const deletes: Step[] = [];
  for (const action of RULE_ACTIONS) {
    const adds = added[action] ?? [];
    const rems = removed[action] ?? [];
    const movable = action === "allow" ? movableAllows(rems, declared, kept) : [];
    const n = Math.min(adds.length, movable.length);
    for (let i = 0; i < n; i++) moves.push({ op: "move", rule: movable[i], to: adds[i] });
    creates.push(...adds.slice(n).map((to): Step => ({ op: "create", to })));
    deletes.push(...rems.filter((r) => !movable.slice(0, n).includes(r)).map((rule): Step => ({ op: "delete", rule })));
  }
  // an action not known yet: a create, reusing no rule
  creates.push(...(added.unknown ?? []).map((to): Step => ({ op: "create", to })));
  return { steps: [...creates, ...retexts, ...moves, ...flips, ...deletes] };
}

/**
 * The removed allow rules that may move: those whose range, as far as the declaration allows it after
 * the run, the rules kept through it (declared with the same action) allow already. A move closes its
 * old range at once, before the creates of its phase: a part still to be allowed after the run and
 * allowed by nothing else would be closed in between, or for good if a create failed. An action not
 * known yet counts as allow, a CIDR not known yet as none; a CIDR the model cannot read: no move.
 */
function movableAllows(removed: Member[], declared: DeclaredRule[], kept: Member[]): Member[] {
  if (!removed.length) return removed;
  const known = declared.filter((d) => typeof d.cidr === "string" && !("reason" in parseCidr(d.cidr)));
  const after = accessOf(
    known.map((d): AccessRule => ({ cidr: d.cidr as string, action: d.action === "deny" ? "deny" : "allow" })),
  );
  try {
    const held = accessOf(kept.map((r): AccessRule => ({ cidr: r.cidr, action: r.action as Action })));
    const exposed = subtract(intersect(spaceOf(removed.map((r) => r.cidr)), after), held);
    if (isEmpty(exposed)) return removed;
    return removed.filter((r) => isEmpty(intersect(spaceOf([r.cidr]), exposed)));
  } catch {
    return [];
  }
}

/**
 * The action a step leaves on its CIDR: a create's or flip's target,
 * the rule's own for a move or retext; undefined for a delete.
 */
export function actionAfter(s: Step): RuleAction | Unknown | undefined {
  if (s.op === "delete") return undefined;
  return s.op === "create" || s.op === "flip" ? s.to.action : s.rule.action;
}

/** An action not known yet may be allow: the model counts it as one (what it may open). */
const accessAction = (a: RuleAction | Unknown): Action => (isUnknownValue(a) ? "allow" : a);

/**
 * The rule on a step's CIDR(s) before and after it, as the access model reads them: none, or one
 * (a move: the rule on its old CIDR before, on its new one after).
 */
export function stepRules(s: Step): { before: AccessRule[]; after: AccessRule[] } {
  const before = "rule" in s ? [{ cidr: s.rule.cidr, action: s.rule.action }] : [];
  switch (s.op) {
    case "delete":
      return { before, after: [] };
    case "retext":
      return { before, after: before };
    case "move":
      return { before, after: [{ cidr: s.to.cidr, action: s.rule.action }] };
    case "create":
    case "flip":
      return { before, after: [{ cidr: s.to.cidr, action: accessAction(s.to.action) }] };
  }
}

/**
 * Whether replacing rules `before` by `after` may open a range: let an address in, beside some other
 * rules of the policy, that was not let in before (access.ts mayOpen: the one definition, for steps
 * and for rules changed by hand). A CIDR the model cannot read counts as opening.
 */
export function changeOpens(before: AccessRule[], after: AccessRule[]): boolean {
  try {
    return opensAny(before, after);
  } catch {
    return true;
  }
}

/**
 * Whether a step opens a range (changeOpens of its rule before and after it). So an allow created,
 * moved (to a range its old one does not hold) or flipped to opens; a deny deleted frees its range for
 * the allow rules that remain; a deny created, an allow deleted or a changed text open nothing. An
 * action not known yet may be allow: it opens.
 */
export function opens(s: Step): boolean {
  const memo = stepOpens();
  let known = memo.get(s);
  if (known === undefined) {
    const { before, after } = stepRules(s);
    memo.set(s, (known = changeOpens(before, after)));
  }
  return known;
}

/** opens() of each step object, once (apply.ts sorts 5,000 steps by phase: 130,000 calls); steps do not change. */
function stepOpens(): WeakMap<Step, boolean> {
  return processState<WeakMap<Step, boolean>>("step-opens", () => new WeakMap());
}

/**
 * The phase a step runs in (apply.ts): each starts only when the one before has succeeded, so that a
 * run stopped anywhere leaves every address with the verdict it had before the run or the one it has
 * after it. 0: what closes (deny creates, flips to deny); 1: texts; 2: what opens by adding (allow
 * creates, moves, flips to allow); 3: allow deletes (after the allow rules that replace them exist);
 * 4: deny deletes, last (what they free is allowed by the rules that remain only).
 */
export function phase(s: Step): number {
  if (s.op === "retext") return 1;
  if (s.op === "delete") return opens(s) ? 4 : 3;
  return opens(s) ? 2 : 0;
}

/** The plan as property paths (a plugin's DetailedDiff): each rule under its CIDR. */
export function planDiff(p: Plan): Record<string, DiffKind> {
  const at = (c: string) => `rules[${JSON.stringify(canonicalCidr(c))}]`;
  const out: Record<string, DiffKind> = {};
  for (const s of p.steps) {
    if (s.op === "create") out[at(s.to.cidr)] = "add";
    else if (s.op === "delete") out[at(s.rule.cidr)] = "delete";
    else if (s.op === "flip") out[`${at(s.rule.cidr)}.action`] = "update";
    else if (s.op === "move") {
      out[at(s.rule.cidr)] = "delete";
      out[at(s.to.cidr)] = "add";
    } else for (const k of changedTexts(s.rule, s.to)) out[`${at(s.rule.cidr)}.${k}`] = "update";
  }
  return out;
}

// ---- the plan as a value Pulumi's update plans hold ---------------------------------------------

/** A step by CIDR, no text: what a Pulumi update plan (`preview --save-plan`, `up --plan`) compares. */
export interface StepSummary {
  op: Op;
  cidr: string;
  /** A move's new CIDR, a create's or flip's action (the engine's unknown where not known yet). */
  to?: string;
  /** A retext's (or move's) changed texts, by name. */
  texts?: TextField[];
}

/** The plan's steps by CIDR (`unknown`: the engine's value for one not known yet). */
export function summary(p: Plan, unknown: string): StepSummary[] {
  const known = (v: string | Unknown) => (isUnknownValue(v) ? unknown : v);
  return p.steps.map((s): StepSummary => {
    if (s.op === "create") return { op: s.op, cidr: s.to.cidr, to: known(s.to.action) };
    const cidr = canonicalCidr(s.rule.cidr);
    if (s.op === "delete") return { op: s.op, cidr, to: s.rule.action };
    if (s.op === "flip") return { op: s.op, cidr, to: known(s.to.action) };
    const texts = changedTexts(s.rule, s.to);
    return { op: s.op, cidr, ...(s.op === "move" ? { to: s.to.cidr } : {}), ...(texts.length ? { texts } : {}) };
  });
}
