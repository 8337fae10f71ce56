// IpPolicyRuleSet: every rule of one IP policy as one resource (authoritative). This module is the
// provider itself, whichever host serves it (see provider/api-key.ts). The set's id is its policy's
// id: a policy has one set (two in one stack are refused; see ownership.ts claimPolicy).
//
// The flow, one file each (docs/design/rule-sets.md draws it): the program's rules (declared.ts) and
// the recorded ones (live.ts) make a plan (plan.ts, pure), which a preview shows and records as its
// promise (promise.ts); an update plans again from the same state, reconciles that plan with the
// promise and the policy as it is now (guard.ts, pure), and applies what is left in phases that
// close before they open (apply.ts). The verbs below only read, call those, and report.
import { ID_PREFIX } from "../../contract/common";
import { report } from "../engine";
import { policyAccessWords } from "../messages";
import { plainError } from "../errors";
import { changedFields, checkFields, DiffKind, Fields } from "../fields";
import { accessEffect, canonicalCidr } from "../access";
import { adoptExistingAllowed, claim, claimed, claimPolicy, claimText, makerName, pendingText, noteSetMembers, othersMarker, resourceLabel } from "../ownership";
import { checkConnection, keptInputs, PROFILE_FIELD } from "../profiles";
import { processState } from "../state";
import { boolean, CheckFailure, id, isUnknown, UNKNOWN } from "../validate";
import { apply, bindOwnMarkers, listed } from "./apply";
import { create, previewCreate, previewUnknownCreate, reportLeftUndone, reportOthers, stillOnPolicy } from "./create";
import { checkRules, CheckedRuleSetInputs, declaredList, DeclaredRule, declaredRules, IpPolicyRuleSetInputs, isUnknownValue, keyedRules, secretRules } from "./declared";
import { reconcile, unchanged } from "./guard";
import { byStack, Claimed, declaredForms, IpPolicyRuleSetMember, IpPolicyRuleSetOutputs, keyed, members, named, outputs, policyRules, provenOthers } from "./live";
import { describe, plan, planDiff, Step, summary, textChanges, texts } from "./plan";
import { foundAfterPreview, noteRefresh, previewRefreshSaw, promisesFor, promiseTerms, showPlan } from "./promise";
import { refuseDeleteWhenHolding } from "./saved-plan";

export { configure } from "../config";
export { create };
export type { CheckedRuleSetInputs, IpPolicyRuleSetInputs, IpPolicyRuleSetRule } from "./declared";
export type { IpPolicyRuleSetMember, IpPolicyRuleSetOutputs } from "./live";

const KIND = "IP policy rule set";
const SHOWN = 5; // rules named per kind in a refresh's message

export const FIELDS: Fields<IpPolicyRuleSetInputs> = {
  ipPolicyId: { required: true, check: id(ID_PREFIX.ipPolicy), onChange: "replace" },
  // Whether the rules changed is the plan's to say (diff): no `same` here, which would plan twice more.
  rules: { required: ": a list of {cidr, action, description?, metadata?} (an empty list deletes every rule of the policy)", check: checkRules, canonical: keyedRules, onChange: "update" },
  takeOver: { check: boolean },
  profile: PROFILE_FIELD,
};

const SUMMARY_STEPS = 100; // a plan longer than this is held by Pulumi's update plans as a digest

/**
 * The set's plan in its checked inputs (`__plan`), for Pulumi's update plans: `pulumi preview
 * --save-plan` records each resource's checked inputs, and `pulumi up --plan` refuses, before any
 * write, checked inputs that differ. Made from the rules the state's inputs record (a refresh writes
 * them from the policy): a rule that came to the policy since the saved preview changes it. By CIDR
 * and action, no text; a keyed digest when the rules are secret or many. The outputs keep a copy,
 * which a refresh hands back as inputs, so that a refresh alone changes nothing here.
 */
function pulumiPlan(olds: Partial<CheckedRuleSetInputs>, news: CheckedRuleSetInputs): unknown {
  const declared = declaredRules(news.rules);
  if (isUnknownValue(declared) || isUnknown(news.ipPolicyId) || isUnknown(news.profile)) return UNKNOWN;
  const replaced = olds.ipPolicyId === undefined || changedFields(FIELDS, olds, news).replaces.length > 0;
  const before = replaced ? [] : declaredRules(olds.rules ?? {});
  const recorded = isUnknownValue(before) ? [] : before.map((d) => ({ ...d, id: "", uri: "", createdAt: "" }) as IpPolicyRuleSetMember);
  const steps = summary(plan(Object.values(keyed(recorded)), declared), UNKNOWN);
  if (steps.length <= SUMMARY_STEPS && !secretRules(news)) return { steps };
  return { count: steps.length, digest: promiseTerms(news.profile).digestOf(steps) };
}

/** Operations of this process that checked a set (by URN): their diff shows the plan; a refresh's diff, which no check precedes, does not. */
function checkedSets(): { urns: string[] } {
  return processState<{ urns: string[] }>("rule-set-checks", () => ({ urns: [] }));
}

export async function check(olds: Partial<CheckedRuleSetInputs>, news: IpPolicyRuleSetInputs & { __urn?: string }) {
  const failures: CheckFailure[] = [];
  checkConnection(news, failures);
  const inputs = checkFields(FIELDS, news, failures) as unknown as CheckedRuleSetInputs;
  if (inputs.takeOver === false) delete inputs.takeOver; // false is the default: no diff against unset
  if (Array.isArray(inputs.__secrets) && !inputs.__secrets.length) delete inputs.__secrets; // as the outputs (and a refresh's inputs) keep it
  if (inputs.__urn && !checkedSets().urns.includes(inputs.__urn)) checkedSets().urns.push(inputs.__urn);
  if (!failures.length && !isUnknown(inputs.ipPolicyId)) {
    const clash = claimPolicy("set", resourceLabel(inputs.__urn, "IpPolicyRuleSet", `IpPolicyRuleSet of ${inputs.ipPolicyId}`), inputs.ipPolicyId);
    if (clash) failures.push({ property: "ipPolicyId", reason: clash });
  }
  // A new set (or one replaced: another policy, another profile) is created now: what will it do?
  if (!failures.length && (olds.ipPolicyId === undefined || changedFields(FIELDS, olds, inputs).replaces.length)) {
    if (!isUnknown(inputs.ipPolicyId) && !isUnknown(inputs.rules) && !isUnknown(inputs.takeOver)) failures.push(...(await previewCreate(inputs)));
    else if (inputs.__urn) await previewUnknownCreate(inputs, inputs.__urn);
  }
  if (!failures.length) inputs.__plan = pulumiPlan(olds, inputs);
  return { inputs, failures };
}

export async function diff(_id: string, olds: IpPolicyRuleSetOutputs, news: CheckedRuleSetInputs) {
  const { replaces } = changedFields(FIELDS, olds, news);
  if (replaces.length) return { changes: true, replaces, deleteBeforeReplace: false, detailedDiff: Object.fromEntries(replaces.map((k) => [k, "update-replace" as DiffKind])) };
  const urn = news.__urn && checkedSets().urns.includes(news.__urn) ? news.__urn : undefined; // shown once per operation
  const recorded = members(olds.rules);
  noteSetMembers(recorded.map((r) => r.id)); // the set keeps them, changed or not: see ip-policy-rule.ts remove
  const declared = declaredRules(news.rules);
  const secret = secretRules(olds, news);
  const terms = promiseTerms(olds.profile);
  const what = `update IP policy rule set of ${olds.ipPolicyId}`;
  if (isUnknownValue(declared)) {
    // Which CIDRs the program declares is not known yet: no plan can say what up does; say what it may do.
    if (urn) {
      const may = Object.values(keyed(recorded)).map((r) => `  ? ${named(r)}${texts(r, secret)}`);
      report(urn, [`plan for ${olds.ipPolicyId}: the rules are not known yet (they depend on other resources): up makes the policy hold exactly the declared rules, and may change or delete any of the ${recorded.length} it holds now`, ...may].join("\n"));
      await showPlan(urn, { policy: olds.ipPolicyId, from: recorded.map(terms.seeRule), shown: { anyOf: recorded.map(terms.seeRule) } }, what);
    }
    return { changes: true, replaces: [], detailedDiff: { rules: "update" as DiffKind } };
  }
  // A description, metadata or action not known yet counts as changed, and says so.
  const p = plan(recorded, declared);
  const words = describe(p, secret);
  if (urn) {
    // The plan's last line says what it does to the policy's access (its first line stays what Pulumi's rows show).
    const access = words ? policyAccessWords(olds.ipPolicyId, accessEffect(recorded, declared), "plan") : "";
    if (words) report(urn, `plan for ${olds.ipPolicyId}: ${words}\n${access}`);
    await showPlan(urn, { policy: olds.ipPolicyId, from: recorded.map(terms.seeRule), declared: declared.map(terms.seeDeclared), shown: { steps: p.steps.map(terms.see) } }, what);
  }
  return { changes: words !== "", replaces: [], detailedDiff: planDiff(p) };
}

export async function read(id: string, props: Partial<IpPolicyRuleSetOutputs> = {}) {
  const ipPolicyId = props.ipPolicyId ?? id;
  // Rules other stacks' resources made (their markers verify) are theirs: named, never recorded. A
  // marker that does not verify is a claim: its rule is drift, recorded, and named with its claim.
  const { rest: rules, others, claims } = byStack(await policyRules(ipPolicyId, props.profile, `read IP policy rule set of ${ipPolicyId}`, members(props.rules)), props.__urn);
  // Inputs as the live policy would declare them: after a refresh, `preview --diff` shows a rule
  // added, changed or deleted by hand as that rule. Read with nothing known of the set (an import),
  // they are what a program writes: a list (Pulumi writes the program from them).
  const declared = declaredForms(rules);
  const inputs = { ipPolicyId, rules: props.rules === undefined ? declaredList(declared) : declared, ...keptInputs(props), ...(props.__plan !== undefined ? { __plan: props.__plan } : {}) };
  if (props.rules !== undefined) sayDrift(props, rules, others, claims);
  return { id, props: outputs({ ipPolicyId }, rules, props), inputs };
}

/** Whose a rule left to another stack is: `made by …`, or `pending: …` (its marker not bound to its id yet). */
const madeBy = (o: Claimed) => (o.pending ? pendingText(o.maker, o.pending) : `made by ${makerName(o.maker)}`);

/** What a rule's unverified marker claims, `, claims IpPolicyRule p of stack s/b: not verified (…)`. */
const claimOf = (claims: Claimed[], r: IpPolicyRuleSetMember) => {
  const c = claims.find((x) => x.rule.id === r.id);
  return c ? `, ${claimText(c.maker, c.because ?? "unsigned")}` : "";
};

/** What changed in a rule: `cidr a → b, description "x" → "y"`. */
function driftOf(was: IpPolicyRuleSetMember, now: IpPolicyRuleSetMember, secret: boolean): string {
  const moves = canonicalCidr(was.cidr) !== canonicalCidr(now.cidr) ? [`cidr ${was.cidr} → ${now.cidr}`] : [];
  const flips = was.action !== now.action ? [`action ${was.action} → ${now.action}`] : [];
  return [...moves, ...flips, textChanges(was, now, secret)].filter(Boolean).join(", ");
}

/** What the rules changed since the state recorded them did to the policy's access, in a line. */
const accessDrift = (props: Partial<IpPolicyRuleSetOutputs>, rules: IpPolicyRuleSetMember[]) =>
  policyAccessWords(String(props.ipPolicyId), accessEffect(members(props.rules), rules), "drift");

/**
 * A refresh names what it found changed (the diff of `rules` is hidden: it would print every rule),
 * and records the rules it found added or changed: this command's destroy leaves them (its preview
 * cannot name them).
 */
function sayDrift(props: Partial<IpPolicyRuleSetOutputs>, rules: IpPolicyRuleSetMember[], others: Claimed[], claims: Claimed[]): void {
  const before: Record<string, IpPolicyRuleSetMember> = {};
  for (const r of members(props.rules)) before[r.id] = r;
  const now: Record<string, true> = {};
  for (const r of rules) now[r.id] = true;
  const secret = secretRules(props);
  const added = rules.filter((r) => !before[r.id]);
  const changedNow = rules.filter((r) => before[r.id] && !unchanged(before[r.id], r));
  const changed = changedNow.map((r) => `${named(before[r.id])}: ${driftOf(before[r.id], r, secret)}`);
  const deleted = Object.values(before).filter((r) => !now[r.id] && !others.some((o) => o.rule.id === r.id)).map(named);
  if (props.__urn) noteRefresh(props.__urn, [...added, ...changedNow, ...others.map((o) => o.rule)].map(promiseTerms(props.profile).seeRule));
  // A short first line (Pulumi's rows show a message's first line, again at each change of the row),
  // then one line per rule, as a plan has them.
  const counts = [[added.length, "added"], [changed.length, "changed"], [deleted.length, "deleted"]].filter(([n]) => n).map(([n, what]) => `${n} ${what}`);
  const lines = (what: string, items: string[]) => [...items.slice(0, SHOWN).map((item) => `  ${what} ${item}`), ...(items.length > SHOWN ? [`  … ${items.length - SHOWN} more ${what}`] : [])];
  if (!counts.length && !others.length) return;
  const head = counts.length ? `rules changed since the state last recorded the policy: ${counts.join(", ")}` : `the policy holds ${others.length} rule${others.length === 1 ? "" : "s"} other stacks made, left to them`;
  report(props.__urn, [`refresh of the IpPolicyRuleSet of ${props.ipPolicyId}: ${head}`,
    ...lines("added", added.map((r) => `${named(r)}${texts(r, secret)}${claimOf(claims, r)}`)), ...lines("changed", changed), ...lines("deleted", deleted),
    ...lines("left", others.map((o) => `${named(o.rule)}, ${madeBy(o)} (not recorded)`)),
    // What the changes found did to the policy's access: a drift gate's log names the exposure.
    ...(counts.length ? [accessDrift(props, rules)] : []),
  ].join("\n"));
}

export async function update(id: string, olds: IpPolicyRuleSetOutputs, news: CheckedRuleSetInputs) {
  const what = `update IP policy rule set of ${news.ipPolicyId}`;
  claim(KIND, news.ipPolicyId, what);
  // The plan its preview showed (diff made it from the same state and program), checked against the
  // policy as it is now: a killed or failed run, or a hand, may have changed it.
  const recorded = members(olds.rules);
  const declared = declaredRules(news.rules) as DeclaredRule[];
  const terms = promiseTerms(news.profile);
  const { promises } = promisesFor(news.__urn, { policy: news.ipPolicyId, from: recorded.map(terms.seeRule), declared: declared.map(terms.seeDeclared) }, what);
  const live = await policyRules(news.ipPolicyId, news.profile, what, recorded, true);
  stillOnPolicy(live, news.__urn, recorded, what, news.ipPolicyId);
  const current = live.rules;
  const saw = previewRefreshSaw(news.__urn);
  const decided = reconcile(plan(recorded, declared), {
    recorded, declared, live: current, promises, secret: secretRules(olds, news), see: terms.see,
    claimedElsewhere: (ruleId) => claimed("IP policy rule", ruleId),
    othersOf: provenOthers(live, news.__urn),
    claimedByOther: (ruleId) => !!othersMarker(live.markers[ruleId], news.__urn),
    adoptExisting: adoptExistingAllowed(),
    previewSaw: (r) => saw(terms.seeRule(r)),
  });
  if (decided.refused.length) {
    throw plainError(`${what}: the policy changed since this stack last recorded it, and the plan its preview showed would touch ${listed(decided.refused)}; nothing was changed. ` +
      "Run `pulumi refresh` (or `pulumi up --refresh`): the preview then shows what `up` will do to them.");
  }
  // A failure halfway is a partial update: the engine keeps the old inputs, and so the outputs keep their __plan.
  const before = current.filter((r) => !decided.strangers.includes(r));
  const target = { ...news, __plan: olds.__plan };
  const stepped = new Set(decided.steps.flatMap((s) => ("rule" in s ? [s.rule.id] : [])));
  const applied = await apply(target, before, decided.steps, id, what);
  const rules = await bindOwnMarkers(target, applied, live, stepped, recorded, { id, what });
  if (decided.steps.length) report(news.__urn, policyAccessWords(news.ipPolicyId, accessEffect(before, rules), "done"));
  reportDecision(news.__urn, what, decided);
  return { outs: outputs(news, rules, news) };
}

/** What an update left, and why: each a warning under the set. */
function reportDecision(urn: string | undefined, what: string, d: ReturnType<typeof reconcile>): void {
  const n = (k: number, noun: string) => `${k} ${noun}${k === 1 ? "" : "s"}`;
  if (d.heldBack.length) {
    report(urn, `${what}: held back ${n(d.heldBack.length, "change")} that would open more than the preview showed, as the policy changed since (${d.heldBecause.join("; ")}): ${listed(d.heldBack)}. ` +
      "Run `pulumi up --refresh`: its preview shows what it will do.", { warning: true });
  }
  if (d.adopted.length) report(urn, `${what}: took over ${n(d.adopted.length, "rule")} exactly as declared (ACCESSCTL_ADOPT_EXISTING=1): ${listed(d.adopted.map(named))}`);
  if (d.changedByHand.length) {
    report(urn, `${what}: left ${n(d.changedByHand.length, "rule")} changed since the last refresh, which the preview of this run did not show: ${listed(d.changedByHand)}. ` +
      "They are recorded as they are: the next preview shows what `up` will do to them.", { warning: true });
  }
  reportLeftUndone(urn, what, d.leftUndone);
  if (d.withheld.length) report(urn, `${what}: left ${n(d.withheld.length, "change")} to rules that are not this set's: ${listed(d.withheld)}`, { warning: true });
  const hand = d.strangers.filter((r) => !d.others.some((o) => o.rule === r));
  if (hand.length) {
    report(urn, `${what}: left ${n(hand.length, "rule")} added since the last refresh (by hand or by another stack), not recorded: ${listed(hand.map(named))}. ` +
      "`pulumi refresh` records them; the preview after it shows what `up` will do to them.", { warning: true });
  }
  reportOthers(urn, what, d.others);
}

async function remove(id: string, props: IpPolicyRuleSetOutputs): Promise<void> {
  const ipPolicyId = props.ipPolicyId ?? id;
  const what = `delete IP policy rule set of ${ipPolicyId}`;
  // Replaced by a set of this run on the same policy (another profile of one account, say): that
  // set has recorded these rules as its own; deleting them would empty the policy behind its back.
  if (claimed(KIND, ipPolicyId)) {
    report(props.__urn, `${what}: left its rules in place: the IpPolicyRuleSet that replaces it in this run manages the policy now`, { warning: true });
    return;
  }
  refuseDeleteWhenHolding(what);
  const recorded = members(props.rules);
  const live = await policyRules(ipPolicyId, props.profile, what, recorded, true);
  // Rules other stacks' resources made are theirs (their markers verify): never deleted, and they do
  // not stop a destroy. A rule whose marker only claims so is as any rule added by hand.
  const { rest: current, others, claims } = byStack(live, props.__urn);
  // The rules the state knows, as it knows them: one changed since is not deleted unseen (refresh
  // first); one that came since (or that the refresh after this command's preview found) is left, and
  // named: a deny left closes; an allow left would stay open with nothing managing it, so then nothing
  // is deleted.
  const known: Record<string, IpPolicyRuleSetMember> = {};
  for (const r of recorded) known[r.id] = r;
  // A rule an IpPolicyRule of this run took over (adoptId: the set's rules moved into rule resources) is that resource's now.
  const handedOver = current.filter((r) => claimed("IP policy rule", r.id));
  const rest = current.filter((r) => !handedOver.includes(r));
  const stale = rest.filter((r) => known[r.id] && !unchanged(known[r.id], r)).map((r) => `${named(known[r.id])}: ${driftOf(known[r.id], r, secretRules(props))}`);
  if (stale.length) {
    throw plainError(`${what}: ${stale.length} rule${stale.length === 1 ? "" : "s"} changed since this stack last recorded ${stale.length === 1 ? "it" : "them"}: ${listed(stale)}; nothing was deleted. ` +
      "Run `pulumi refresh` first (or `pulumi destroy --refresh`): it records them as they are.");
  }
  const unshown = foundAfterPreview(props.__urn);
  const ours = (r: IpPolicyRuleSetMember) => !!known[r.id] && !unshown.has(r.id);
  const kept = rest.filter((r) => !ours(r));
  const open = kept.filter((r) => r.action !== "deny");
  if (open.length) {
    throw plainError(`${what}: the policy holds ${open.length} allow rule${open.length === 1 ? "" : "s"} no preview of this stack showed (added since its last refresh, by hand, another stack or an interrupted up): ${listed(open.map((r) => named(r) + claimOf(claims, r)))}; nothing was deleted, ` +
      "as deleting the set's other rules would leave them open with nothing managing them. Run `pulumi up --refresh` (or `pulumi destroy --refresh` when destroying the stack): its preview's refresh names them, and the delete then takes them with the set.");
  }
  const deletes = rest.filter(ours).map((rule): Step => ({ op: "delete", rule }));
  await apply({ ipPolicyId, profile: props.profile, __urn: props.__urn }, current, deletes, id, what, { deleting: true });
  if (kept.length) report(props.__urn, `${what}: left ${kept.length} deny rule(s) no preview of this stack showed (added since its last refresh): ${listed(kept.map(named))}`, { warning: true });
  if (handedOver.length) report(props.__urn, `${what}: left ${handedOver.length} rule(s) that IpPolicyRule resources of this stack manage now: ${listed(handedOver.map(named))}`);
  reportOthers(props.__urn, what, others);
}
export { remove as delete };
