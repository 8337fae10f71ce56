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
import { connection, profileSource } from "../config";
import { report } from "../engine";
import { plainError } from "../errors";
import { changedFields, checkFields, DiffKind, Fields } from "../fields";
import { canonicalCidr } from "../ip-policy-rule";
import { adoptExistingAllowed, claim, claimed, claimPolicy, noteSetMembers, resourceLabel } from "../ownership";
import { checkConnection, keptInputs, PROFILE_FIELD } from "../profiles";
import { processState } from "../state";
import { boolean, CheckFailure, id, isUnknown, UNKNOWN } from "../validate";
import { apply, listed } from "./apply";
import { checkRules, CheckedRuleSetInputs, declaredList, DeclaredRule, declaredRules, IpPolicyRuleSetInputs, isUnknownValue, keyedRules, UNKNOWN_VALUE } from "./declared";
import { exactlyAsDeclared, holdToShown, reconcile, unchanged } from "./guard";
import { declaredForms, IpPolicyRuleSetMember, IpPolicyRuleSetOutputs, keyed, members, named, outputs, policyRules } from "./live";
import { describe, plan, planDiff, Step, summary, textChanges, texts } from "./plan";
import { foundAfterPreview, keyedDigest, noteRefresh, noteShown, noteTakeoverShown, seenRule, seenStep, Shown, shownFor, takeoverShownFor, textsDigest } from "./promise";
import { DeclaredSeen, savedPlanFor, SavedSet, savePlan } from "./saved-plan";
import type { RuleSeen } from "./promise";

export { configure } from "../config";
export type { CheckedRuleSetInputs, IpPolicyRuleSetInputs, IpPolicyRuleSetRule } from "./declared";
export type { IpPolicyRuleSetMember, IpPolicyRuleSetOutputs } from "./live";

const KIND = "IP policy rule set";

export const FIELDS: Fields<IpPolicyRuleSetInputs> = {
  ipPolicyId: { required: true, check: id(ID_PREFIX.ipPolicy), onChange: "replace" },
  // Whether the rules changed is the plan's to say (diff): no `same` here, which would plan twice more.
  rules: { required: ": a list of {cidr, action, description?, metadata?} (an empty list deletes every rule of the policy)", check: checkRules, canonical: keyedRules, onChange: "update" },
  takeOver: { check: boolean },
  profile: PROFILE_FIELD,
};

const requests = (n: number) => `${n} request${n === 1 ? "" : "s"}`;

/** Whether the rules' texts are secret (the program made part of `rules` secret, now or when the state was written): plans show `[secret]`. */
const secretRules = (...props: { __secrets?: string[] }[]) => props.some((p) => p.__secrets?.includes("rules") ?? false);

/** The promise's terms for this set's account: texts by a digest keyed with its API key. */
function promiseTerms(profile: unknown) {
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
    seeDeclared: (d: DeclaredRule): DeclaredSeen => ({ cidr: d.cidr, action: d.action as string, texts: digest(d) as string }),
  };
}

/** What a set's operation holds to besides this command's preview: a saved plan's (see saved-plan.ts), checked against what it was made from. */
function promisesFor(urn: string | undefined, now: { from: RuleSeen[]; declared: DeclaredSeen[] }, what: string): { promises: Shown[][]; saved?: SavedSet } {
  const saved = savedPlanFor(urn, now, what);
  const promises = [shownFor(urn), saved ? [saved.shown] : undefined].filter((p): p is Shown[] => p !== undefined);
  return { promises, saved };
}

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

/** A plan a set showed: noted for the update of this command, and saved in the plan file of a `pulumi preview`; an `up` checks the file's at once. */
async function showPlan(urn: string, set: SavedSet, what: string): Promise<void> {
  noteShown(urn, set.shown);
  await savePlan(urn, set);
  savedPlanFor(urn, { from: set.from, declared: set.declared ?? [] }, what); // an up with a plan file that will refuse fails at its preview
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
    if (!isUnknown(inputs.ipPolicyId) && !isUnknown(inputs.rules) && !isUnknown(inputs.takeOver)) await previewCreate(inputs);
    else if (inputs.__urn) await previewUnknownCreate(inputs, inputs.__urn);
  }
  if (!failures.length) inputs.__plan = pulumiPlan(olds, inputs);
  return { inputs, failures };
}

/** A create whose policy or rules are not known yet: the preview says so, and that is its promise (any create). */
async function previewUnknownCreate(inputs: CheckedRuleSetInputs, urn: string): Promise<void> {
  const takeover = inputs.takeOver === true || isUnknown(inputs.takeOver);
  await showPlan(urn, { from: [], shown: { anyOf: [] }, ...(takeover ? { takeover: UNKNOWN_VALUE } : {}) }, `create IpPolicyRuleSet`);
  if (!takeover) return;
  const policy = isUnknown(inputs.ipPolicyId) ? "the set's policy" : inputs.ipPolicyId;
  report(urn, `plan for ${policy}: not known yet (it depends on other resources); with takeOver, up takes over whatever rules the policy holds then, as they are`);
  noteTakeoverShown(urn, UNKNOWN_VALUE);
}

/**
 * A create's plan, shown under the resource at preview. A takeover (or ACCESSCTL_ADOPT_EXISTING=1)
 * lists the policy (once, and only then): a takeover takes every rule over as it is and writes
 * nothing, the next `up` does the rest.
 */
async function previewCreate(inputs: CheckedRuleSetInputs): Promise<void> {
  const declared = declaredRules(inputs.rules) as DeclaredRule[];
  const urn = inputs.__urn;
  const terms = promiseTerms(inputs.profile);
  const takeover = inputs.takeOver === true;
  const listing = takeover || adoptExistingAllowed() ? await listForPreview(inputs) : undefined;
  const taken = takeover ? (listing?.rules ?? []).map((r) => r.id) : undefined; // a listing that failed promised to take none
  if (urn) {
    await showPlan(urn, { from: [], declared: declared.map(terms.seeDeclared), shown: { steps: plan([], declared).steps.map(terms.see) }, ...(taken ? { takeover: taken } : {}) }, `create IP policy rule set of ${inputs.ipPolicyId}`);
    if (taken) noteTakeoverShown(urn, taken);
  }
  const head = `plan for ${inputs.ipPolicyId}`;
  const creates = (n: number) => `create ${n} rule${n === 1 ? "" : "s"}: ${requests(n)}`;
  if (!listing || (listing.error && !takeover)) return report(urn, `${head}: ${creates(declared.length)}`);
  if (listing.error) return report(urn, `${head}: takeOver: could not list the policy to say what the takeover will take (${listing.error}); up will take none of its rules`, { warning: true });
  const current = listing.rules!;
  if (!takeover) return previewAdoption(inputs, declared, current);
  if (!current.length) return report(urn, `${head}: takeOver: the policy holds no rule; create ${declared.length}: ${requests(declared.length)}`);
  const asIs = current.filter((r) => exactlyAsDeclared(declared, r)).length;
  const undeclared = current.filter((r) => !declared.some((d) => d.cidr === canonicalCidr(r.cidr))).length;
  const then = describe(plan(Object.values(keyed(current)), declared), secretRules(inputs));
  report(urn, `${head}: take over the ${current.length} rule${current.length === 1 ? "" : "s"} the policy holds (${asIs} as declared, ${undeclared} not declared), ` +
    `writing nothing now; ${then ? `the next up then: ${then}` : "nothing more to do"}`);
}

/** The policy's rules, for a preview that says what a create takes over; or why they could not be listed. */
async function listForPreview(inputs: CheckedRuleSetInputs): Promise<{ rules?: IpPolicyRuleSetMember[]; error?: string }> {
  try {
    return { rules: await policyRules(inputs.ipPolicyId, inputs.profile, `preview the ${inputs.takeOver ? "takeover" : "create"} of ${inputs.ipPolicyId}`) };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

/** A create under ACCESSCTL_ADOPT_EXISTING=1: what it takes over (rules exactly as declared) and what it creates. */
function previewAdoption(inputs: CheckedRuleSetInputs, declared: DeclaredRule[], current: IpPolicyRuleSetMember[]): void {
  const adopted = current.filter((r) => exactlyAsDeclared(declared, r));
  const others = current.filter((r) => !adopted.includes(r));
  const toCreate = declared.length - adopted.length;
  const words = `take over ${adopted.length} rule${adopted.length === 1 ? "" : "s"} exactly as declared (ACCESSCTL_ADOPT_EXISTING=1), create ${toCreate}: ${requests(toCreate)}`;
  const refused = others.length ? `; but the policy holds ${others.length} rule${others.length === 1 ? "" : "s"} not as declared (${listed(others.map(named))}), so up will fail: declare takeOver: true to take them over as they are` : "";
  report(inputs.__urn, `plan for ${inputs.ipPolicyId}: ${words}${refused}`, refused ? { warning: true } : {});
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
      const may = Object.values(keyed(recorded)).map((r) => `  ? ${r.cidr} ${r.action} (${r.id})${texts(r, secret)}`);
      report(urn, [`plan for ${olds.ipPolicyId}: the rules are not known yet (they depend on other resources): up makes the policy hold exactly the declared rules, and may change or delete any of the ${recorded.length} it holds now`, ...may].join("\n"));
      await showPlan(urn, { from: recorded.map(terms.seeRule), shown: { anyOf: recorded.map(terms.seeRule) } }, what);
    }
    return { changes: true, replaces: [], detailedDiff: { rules: "update" as DiffKind } };
  }
  // A description, metadata or action not known yet counts as changed, and says so.
  const p = plan(recorded, declared);
  const words = describe(p, secret);
  if (urn) {
    if (words) report(urn, `plan for ${olds.ipPolicyId}: ${words}`);
    await showPlan(urn, { from: recorded.map(terms.seeRule), declared: declared.map(terms.seeDeclared), shown: { steps: p.steps.map(terms.see) } }, what);
  }
  return { changes: words !== "", replaces: [], detailedDiff: planDiff(p) };
}

export async function create(inputs: CheckedRuleSetInputs) {
  const what = `create IP policy rule set of ${inputs.ipPolicyId}`;
  claim(KIND, inputs.ipPolicyId, what);
  const declared = declaredRules(inputs.rules) as DeclaredRule[];
  const terms = promiseTerms(inputs.profile);
  const { promises, saved } = promisesFor(inputs.__urn, { from: [], declared: declared.map(terms.seeDeclared) }, what);
  const current = await policyRules(inputs.ipPolicyId, inputs.profile, what, [], true);
  if (inputs.takeOver === true && current.length) return takeOver(inputs, current, saved, what);
  // ACCESSCTL_ADOPT_EXISTING=1 (after a killed first `up`) takes only what that run can have made:
  // rules exactly as declared. Anything else needs the program to say takeOver: true.
  const refused = current.filter((r) => !(adoptExistingAllowed() && exactlyAsDeclared(declared, r)));
  if (refused.length) {
    const names = Object.values(keyed(refused)).map(named);
    throw plainError(`${what}: the policy already holds ${refused.length} rule${refused.length === 1 ? "" : "s"}${adoptExistingAllowed() ? " not as declared" : ""}: ${listed(names)}; nothing was changed. ` +
      "To make them this resource's, declare takeOver: true: the set takes them over as they are, and the next `up`, after a preview that shows each change, brings them to the declaration. " +
      (adoptExistingAllowed() ? "ACCESSCTL_ADOPT_EXISTING=1 takes only rules exactly as declared (what an interrupted `pulumi up` of this stack can have made)." :
        "If an interrupted `pulumi up` of this stack made them, run `ACCESSCTL_ADOPT_EXISTING=1 pulumi up` once."));
  }
  const held = holdToShown(plan(current, declared), promises, terms.see);
  const rules = await apply(inputs, current, held.steps, inputs.ipPolicyId, what);
  reportLeftUndone(inputs.__urn, what, held.left);
  return { id: inputs.ipPolicyId, outs: outputs(inputs, rules, inputs) };
}

/**
 * A takeover records what the policy holds and writes nothing (its preview said so); the next
 * preview shows each change and the next up makes it. Only what its preview listed: a rule added
 * since is no one's to take unseen (its destroy would delete it).
 */
function takeOver(inputs: CheckedRuleSetInputs, current: IpPolicyRuleSetMember[], saved: SavedSet | undefined, what: string) {
  const listedThen = takeoverShownFor(inputs.__urn);
  // No listing by a preview (in a run by the engine, which gives a URN): take nothing unseen. A saved
  // plan's preview must have listed it too.
  const inSaved = (r: IpPolicyRuleSetMember) => !saved || isUnknownValue(saved.takeover) || (saved.takeover ?? []).includes(r.id);
  const taken = (isUnknownValue(listedThen) || (!listedThen && !inputs.__urn) ? current : current.filter((r) => (listedThen as Set<string> | undefined)?.has(r.id))).filter(inSaved);
  const since = current.filter((r) => !taken.includes(r)).map(named);
  if (!taken.length) {
    throw plainError(`${what}: the policy holds ${since.length} rule${since.length === 1 ? "" : "s"} its preview did not show (added since): ${listed(since)}; nothing was changed. ` +
      "Run `pulumi up` again: its preview shows what the takeover takes.");
  }
  if (since.length) report(inputs.__urn, `${what}: left ${since.length} rule${since.length === 1 ? "" : "s"} its preview did not list (added since), not recorded: ${listed(since)}. \`pulumi refresh\` records them; the preview after it shows what \`up\` will do to them.`, { warning: true });
  return { id: inputs.ipPolicyId, outs: outputs(inputs, taken, inputs) };
}

export async function read(id: string, props: Partial<IpPolicyRuleSetOutputs> = {}) {
  const ipPolicyId = props.ipPolicyId ?? id;
  const rules = await policyRules(ipPolicyId, props.profile, `read IP policy rule set of ${ipPolicyId}`, members(props.rules));
  // Inputs as the live policy would declare them: after a refresh, `preview --diff` shows a rule
  // added, changed or deleted by hand as that rule. Read with nothing known of the set (an import),
  // they are what a program writes: a list (Pulumi writes the program from them).
  const declared = declaredForms(rules);
  const inputs = { ipPolicyId, rules: props.rules === undefined ? declaredList(declared) : declared, ...keptInputs(props), ...(props.__plan !== undefined ? { __plan: props.__plan } : {}) };
  if (props.rules !== undefined) sayDrift(props, rules);
  return { id, props: outputs({ ipPolicyId }, rules, props), inputs };
}

/** What changed in a rule: `cidr a → b, description "x" → "y"`. */
function driftOf(was: IpPolicyRuleSetMember, now: IpPolicyRuleSetMember, secret: boolean): string {
  const moves = canonicalCidr(was.cidr) !== canonicalCidr(now.cidr) ? [`cidr ${was.cidr} → ${now.cidr}`] : [];
  const flips = was.action !== now.action ? [`action ${was.action} → ${now.action}`] : [];
  return [...moves, ...flips, textChanges(was, now, secret)].filter(Boolean).join(", ");
}

/**
 * A refresh names what it found changed (the diff of `rules` is hidden: it would print every rule),
 * and records the rules it found added or changed: this command's destroy leaves them (its preview
 * cannot name them).
 */
function sayDrift(props: Partial<IpPolicyRuleSetOutputs>, rules: IpPolicyRuleSetMember[]): void {
  const before: Record<string, IpPolicyRuleSetMember> = {};
  for (const r of members(props.rules)) before[r.id] = r;
  const now: Record<string, true> = {};
  for (const r of rules) now[r.id] = true;
  const secret = secretRules(props);
  const added = rules.filter((r) => !before[r.id]);
  const changedNow = rules.filter((r) => before[r.id] && !unchanged(before[r.id], r));
  const deleted = Object.values(before).filter((r) => !now[r.id]).map(named);
  if (props.__urn) noteRefresh(props.__urn, [...added, ...changedNow].map(promiseTerms(props.profile).seeRule));
  const parts = [
    ...(added.length ? [`added ${listed(added.map((r) => `${named(r)}${texts(r, secret)}`))}`] : []),
    ...(changedNow.length ? [`changed ${listed(changedNow.map((r) => `${named(before[r.id])}: ${driftOf(before[r.id], r, secret)}`))}`] : []),
    ...(deleted.length ? [`deleted ${listed(deleted)}`] : []),
  ];
  if (parts.length) report(props.__urn, `refresh of the IpPolicyRuleSet of ${props.ipPolicyId}: since the state last recorded the policy, rules were ${parts.join("; ")}. Recorded as they are now.`);
}

export async function update(id: string, olds: IpPolicyRuleSetOutputs, news: CheckedRuleSetInputs) {
  const what = `update IP policy rule set of ${news.ipPolicyId}`;
  claim(KIND, news.ipPolicyId, what);
  // The plan its preview showed (diff made it from the same state and program), checked against the
  // policy as it is now: a killed or failed run, or a hand, may have changed it.
  const recorded = members(olds.rules);
  const declared = declaredRules(news.rules) as DeclaredRule[];
  const terms = promiseTerms(news.profile);
  const { promises } = promisesFor(news.__urn, { from: recorded.map(terms.seeRule), declared: declared.map(terms.seeDeclared) }, what);
  const current = await policyRules(news.ipPolicyId, news.profile, what, recorded, true);
  const decided = reconcile(plan(recorded, declared), {
    recorded, declared, live: current, promises, secret: secretRules(olds, news), see: terms.see,
    claimedElsewhere: (ruleId) => claimed("IP policy rule", ruleId),
    adoptExisting: adoptExistingAllowed(),
  });
  if (decided.refused.length) {
    throw plainError(`${what}: the policy changed since this stack last recorded it, and the plan its preview showed would touch ${listed(decided.refused)}; nothing was changed. ` +
      "Run `pulumi refresh` (or `pulumi up --refresh`): the preview then shows what `up` will do to them.");
  }
  // A failure halfway is a partial update: the engine keeps the old inputs, and so the outputs keep their __plan.
  const rules = await apply({ ...news, __plan: olds.__plan }, current.filter((r) => !decided.strangers.includes(r)), decided.steps, id, what);
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
  if (d.strangers.length) {
    report(urn, `${what}: left ${n(d.strangers.length, "rule")} added since the last refresh (by hand or by another stack), not recorded: ${listed(d.strangers.map(named))}. ` +
      "`pulumi refresh` records them; the preview after it shows what `up` will do to them.", { warning: true });
  }
}

function reportLeftUndone(urn: string | undefined, what: string, left: string[]): void {
  if (!left.length) return;
  report(urn, `${what}: left undone ${left.length} change${left.length === 1 ? "" : "s"} the preview of this run did not show (a refresh after it found the policy changed, or a value of the program changed): ${listed(left)}. ` +
    "Run `pulumi up` again: its preview shows them.", { warning: true });
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
  const recorded = members(props.rules);
  const current = await policyRules(ipPolicyId, props.profile, what, recorded, true);
  // The rules the state knows, as it knows them: one changed since is not deleted unseen (refresh
  // first); one that came since (or that the refresh after this command's preview found) is left, and
  // named: a deny left closes; an allow left would stay open with nothing managing it, so then nothing
  // is deleted.
  const known: Record<string, IpPolicyRuleSetMember> = {};
  for (const r of recorded) known[r.id] = r;
  const stale = current.filter((r) => known[r.id] && !unchanged(known[r.id], r)).map((r) => `${named(known[r.id])}: ${driftOf(known[r.id], r, secretRules(props))}`);
  if (stale.length) {
    throw plainError(`${what}: ${stale.length} rule${stale.length === 1 ? "" : "s"} changed since this stack last recorded ${stale.length === 1 ? "it" : "them"}: ${listed(stale)}; nothing was deleted. ` +
      "Run `pulumi refresh` first (or `pulumi destroy --refresh`): it records them as they are.");
  }
  const unshown = foundAfterPreview(props.__urn);
  const ours = (r: IpPolicyRuleSetMember) => !!known[r.id] && !unshown.has(r.id);
  const kept = current.filter((r) => !ours(r));
  const open = kept.filter((r) => r.action !== "deny");
  if (open.length) {
    throw plainError(`${what}: the policy holds ${open.length} allow rule${open.length === 1 ? "" : "s"} no preview of this stack showed (added since its last refresh, by hand, another stack or an interrupted up): ${listed(open.map(named))}; nothing was deleted, ` +
      "as deleting the set's other rules would leave them open with nothing managing them. Run `pulumi up --refresh` (or `pulumi destroy --refresh` when destroying the stack): its preview's refresh names them, and the delete then takes them with the set.");
  }
  const deletes = current.filter(ours).map((rule): Step => ({ op: "delete", rule }));
  await apply({ ipPolicyId, profile: props.profile, __urn: props.__urn }, current, deletes, id, what, true);
  if (kept.length) report(props.__urn, `${what}: left ${kept.length} deny rule(s) no preview of this stack showed (added since its last refresh): ${listed(kept.map(named))}`, { warning: true });
}
export { remove as delete };
