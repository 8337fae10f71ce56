// A new set: what its preview says it will do (a takeover lists the policy), and its create. A
// policy has one set: a policy whose rules another stack's set made (their markers say so) is
// refused; and of two sets of different stacks that start on one policy at once, the one whose
// first rule came first goes on, the other deletes what it made and fails, naming the first. Rules
// other stacks' resources made are left, not recorded; rules this set made in an interrupted run
// (its own marker) are its own; any other rule is taken only with takeOver (or, exactly as
// declared, ACCESSCTL_ADOPT_EXISTING=1).
import { report } from "../engine";
import { plainError } from "../errors";
import { canonicalCidr } from "../ip-policy-rule";
import { adoptExistingAllowed, claim, makerName, Marker, ownerOf } from "../ownership";
import { isUnknown } from "../validate";
import { apply, listed } from "./apply";
import { CheckedRuleSetInputs, DeclaredRule, declaredRules, isUnknownValue, secretRules, UNKNOWN_VALUE } from "./declared";
import { exactlyAsDeclared, holdToShown } from "./guard";
import { IpPolicyRuleSetMember, keyed, LivePolicy, named, outputs, policyRules } from "./live";
import { describe, phase, plan, requests, Step } from "./plan";
import { noteTakeoverShown, promisesFor, promiseTerms, showPlan, takeoverShownFor } from "./promise";
import { SavedSet } from "./saved-plan";

const KIND = "IP policy rule set";
type Member = IpPolicyRuleSetMember;

/** A policy's rules by whose they are, for the set `urn`: its own (its marker), other stacks' (a set's, or another resource's), and the rest. */
function sortOut(live: LivePolicy, urn: unknown) {
  const me = ownerOf(urn);
  const makerOf = (r: Member): Marker | undefined => live.markers[r.id];
  const isMine = (r: Member) => !!me.resource && makerOf(r)?.stack === me.stack && makerOf(r)?.resource === me.resource;
  const isOthers = (r: Member) => !!me.stack && !!makerOf(r)?.stack && makerOf(r)!.stack !== me.stack;
  const others = live.rules.filter(isOthers);
  return {
    mine: live.rules.filter(isMine),
    otherSets: others.filter((r) => makerOf(r)!.resource?.startsWith("IpPolicyRuleSet::")).map((r) => ({ rule: r, maker: makerOf(r)! })),
    others: others.map((r) => ({ rule: r, maker: makerOf(r)! })),
    rest: live.rules.filter((r) => !isMine(r) && !isOthers(r)),
  };
}

/** The sets of other stacks named by their markers, once each. */
const setsOf = (found: { maker: Marker }[]) => [...new Set(found.map((f) => makerName(f.maker)))];

export async function previewUnknownCreate(inputs: CheckedRuleSetInputs, urn: string): Promise<void> {
  const takeover = inputs.takeOver === true || isUnknown(inputs.takeOver);
  await showPlan(urn, { from: [], shown: { anyOf: [] }, ...(takeover ? { takeover: UNKNOWN_VALUE } : {}) }, "create IpPolicyRuleSet");
  if (!takeover) return;
  const policy = isUnknown(inputs.ipPolicyId) ? "the set's policy" : inputs.ipPolicyId;
  report(urn, `plan for ${policy}: not known yet (it depends on other resources); with takeOver, up takes over whatever rules the policy holds then, as they are`);
  noteTakeoverShown(urn, UNKNOWN_VALUE);
}

/**
 * A create's plan, shown under the resource at preview; the policy listed (once, and only then)
 * for a takeover or ACCESSCTL_ADOPT_EXISTING=1: a takeover takes every rule over as it is and writes
 * nothing, the next `up` does the rest.
 */
export async function previewCreate(inputs: CheckedRuleSetInputs): Promise<void> {
  const declared = declaredRules(inputs.rules) as DeclaredRule[];
  const urn = inputs.__urn;
  const terms = promiseTerms(inputs.profile);
  const takeover = inputs.takeOver === true;
  const listing = takeover || adoptExistingAllowed() ? await listForPreview(inputs) : undefined;
  const taken = takeover ? (listing?.live ? sortOut(listing.live, urn).rest.concat(sortOut(listing.live, urn).mine) : []).map((r) => r.id) : undefined; // a listing that failed promised to take none
  if (urn) {
    await showPlan(urn, { from: [], declared: declared.map(terms.seeDeclared), shown: { steps: plan([], declared).steps.map(terms.see) }, ...(taken ? { takeover: taken } : {}) }, `create IP policy rule set of ${inputs.ipPolicyId}`);
    if (taken) noteTakeoverShown(urn, taken);
  }
  const head = `plan for ${inputs.ipPolicyId}`;
  const creates = (n: number) => `create ${n} rule${n === 1 ? "" : "s"}: ${requests(n)}`;
  if (!listing || (listing.error && !takeover)) return report(urn, `${head}: ${creates(declared.length)}`);
  if (listing.error) return report(urn, `${head}: takeOver: could not list the policy to say what the takeover will take (${listing.error}); up will take none of its rules`, { warning: true });
  const found = sortOut(listing.live!, urn);
  if (found.otherSets.length) return report(urn, `${head}: up will fail: the policy's rules are managed by ${setsOf(found.otherSets).join(", ")} (their metadata say so); a policy has one set`, { warning: true });
  const current = [...found.mine, ...found.rest];
  if (!takeover) return previewAdoption(inputs, declared, current);
  if (!current.length) return report(urn, `${head}: takeOver: the policy holds no rule${found.others.length ? " of this stack's or nobody's" : ""}; create ${declared.length}: ${requests(declared.length)}`);
  const asIs = current.filter((r) => exactlyAsDeclared(declared, r)).length;
  const undeclared = current.filter((r) => !declared.some((d) => d.cidr === canonicalCidr(r.cidr))).length;
  const then = describe(plan(Object.values(keyed(current)), declared), secretRules(inputs));
  report(urn, `${head}: take over the ${current.length} rule${current.length === 1 ? "" : "s"} the policy holds (${asIs} as declared, ${undeclared} not declared), ` +
    `writing nothing now; ${then ? `the next up then: ${then}` : "nothing more to do"}`);
}

/** The policy's rules, for a preview that says what a create takes over; or why they could not be listed. */
async function listForPreview(inputs: CheckedRuleSetInputs): Promise<{ live?: LivePolicy; error?: string }> {
  try {
    return { live: await policyRules(inputs.ipPolicyId, inputs.profile, `preview the ${inputs.takeOver ? "takeover" : "create"} of ${inputs.ipPolicyId}`) };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

/** A create under ACCESSCTL_ADOPT_EXISTING=1: what it takes over (rules exactly as declared) and what it creates. */
function previewAdoption(inputs: CheckedRuleSetInputs, declared: DeclaredRule[], current: Member[]): void {
  const adopted = current.filter((r) => exactlyAsDeclared(declared, r));
  const others = current.filter((r) => !adopted.includes(r));
  const toCreate = declared.length - adopted.length;
  const words = `take over ${adopted.length} rule${adopted.length === 1 ? "" : "s"} exactly as declared (ACCESSCTL_ADOPT_EXISTING=1), create ${toCreate}: ${requests(toCreate)}`;
  const refused = others.length ? `; but the policy holds ${others.length} rule${others.length === 1 ? "" : "s"} not as declared (${listed(others.map(named))}), so up will fail: declare takeOver: true to take them over as they are` : "";
  report(inputs.__urn, `plan for ${inputs.ipPolicyId}: ${words}${refused}`, refused ? { warning: true } : {});
}

export async function create(inputs: CheckedRuleSetInputs) {
  const what = `create IP policy rule set of ${inputs.ipPolicyId}`;
  claim(KIND, inputs.ipPolicyId, what);
  const declared = declaredRules(inputs.rules) as DeclaredRule[];
  const terms = promiseTerms(inputs.profile);
  const { promises, saved } = promisesFor(inputs.__urn, { from: [], declared: declared.map(terms.seeDeclared) }, what);
  const found = sortOut(await policyRules(inputs.ipPolicyId, inputs.profile, what, [], true), inputs.__urn);
  if (found.otherSets.length) throw oneSetOnly(what, inputs.ipPolicyId, found.otherSets, "nothing was changed");
  if (inputs.takeOver === true && found.rest.length) return takeOver(inputs, [...found.mine, ...found.rest], saved, what);
  // ACCESSCTL_ADOPT_EXISTING=1 (after a killed first `up`) takes only what that run can have made:
  // rules exactly as declared. Anything else needs the program to say takeOver: true.
  const refused = found.rest.filter((r) => !(adoptExistingAllowed() && exactlyAsDeclared(declared, r)));
  if (refused.length) throw alreadyHolds(what, refused);
  const current = [...found.mine, ...found.rest];
  const held = holdToShown(plan(Object.values(keyed(current)), declared), promises, terms.see);
  const rules = await createAlone(inputs, current, held.steps, what);
  if (found.mine.length) report(inputs.__urn, `${what}: took over ${found.mine.length} rule${found.mine.length === 1 ? "" : "s"} an earlier run of this resource made (their metadata say so): ${listed(found.mine.map(named))}`);
  reportOthers(inputs.__urn, what, found.others);
  if (held.left.length) {
    report(inputs.__urn, `${what}: left undone ${held.left.length} change${held.left.length === 1 ? "" : "s"} the preview of this run did not show (a refresh after it found the policy changed, or a value of the program changed): ${listed(held.left)}. ` +
      "Run `pulumi up` again: its preview shows them.", { warning: true });
  }
  return { id: inputs.ipPolicyId, outs: outputs(inputs, rules, inputs) };
}

function alreadyHolds(what: string, refused: Member[]): Error {
  const names = Object.values(keyed(refused)).map(named);
  return plainError(`${what}: the policy already holds ${refused.length} rule${refused.length === 1 ? "" : "s"}${adoptExistingAllowed() ? " not as declared" : ""}: ${listed(names)}; nothing was changed. ` +
    "To make them this resource's, declare takeOver: true: the set takes them over as they are, and the next `up`, after a preview that shows each change, brings them to the declaration. " +
    (adoptExistingAllowed() ? "ACCESSCTL_ADOPT_EXISTING=1 takes only rules exactly as declared (what an interrupted `pulumi up` of this stack can have made)." :
      "If an interrupted `pulumi up` of this stack made them, run `ACCESSCTL_ADOPT_EXISTING=1 pulumi up` once."));
}

function oneSetOnly(what: string, ipPolicyId: string, otherSets: { maker: Marker }[], outcome: string): Error {
  return plainError(`${what}: the rules of IP policy ${ipPolicyId} are managed by ${setsOf(otherSets).join(", ")} (their metadata say so); ${outcome}. ` +
    "A policy has one set: declare these rules in that set, or use another policy.");
}

export function reportOthers(urn: string | undefined, what: string, others: { rule: Member; maker: Marker }[]): void {
  if (!others.length) return;
  report(urn, `${what}: left ${others.length} rule${others.length === 1 ? "" : "s"} other stacks made, not recorded (their metadata say so): ${listed(others.map((o) => `${named(o.rule)} by ${makerName(o.maker)}`))}`, { warning: true });
}

/**
 * The create's steps, its first one alone: then the policy is listed again, and if another stack's
 * set made rules there meanwhile (two sets started on one policy at once), the set whose earliest
 * rule came first goes on; the other deletes the rules it made, and fails naming the first. Both
 * see the same rules, and decide alike.
 */
async function createAlone(inputs: CheckedRuleSetInputs, current: Member[], steps: Step[], what: string): Promise<Member[]> {
  const ordered = [...steps].sort((a, b) => phase(a) - phase(b));
  if (!ordered.length) return current;
  const afterFirst = await apply(inputs, current, ordered.slice(0, 1), inputs.ipPolicyId, what);
  const made = afterFirst.filter((r) => !current.includes(r));
  const found = sortOut(await policyRules(inputs.ipPolicyId, inputs.profile, what, [], true), inputs.__urn);
  if (!cameFirst(made, found.otherSets.map((o) => o.rule))) {
    await apply(inputs, afterFirst, made.map((rule): Step => ({ op: "delete", rule })), inputs.ipPolicyId, what);
    throw oneSetOnly(what, inputs.ipPolicyId, found.otherSets, `it started on the policy at the same time as this one and came first, so this set deleted the ${made.length} rule${made.length === 1 ? "" : "s"} it had made`);
  }
  return apply(inputs, afterFirst, ordered.slice(1), inputs.ipPolicyId, what);
}

/**
 * Pure: whether a set whose rules are `mine` came to a policy before another set whose rules are
 * `theirs`: its earliest rule was made first (by the service's created_at; the smaller id when two
 * were made at the same moment). Both sets see the same rules, so both decide alike.
 */
export function cameFirst(mine: Member[], theirs: Member[]): boolean {
  const before = (a: Member, b: Member) => Date.parse(a.createdAt) < Date.parse(b.createdAt) || (Date.parse(a.createdAt) === Date.parse(b.createdAt) && a.id < b.id);
  const first = (rules: Member[]) => rules.reduce<Member | undefined>((a, r) => (!a || before(r, a) ? r : a), undefined);
  const [m, t] = [first(mine), first(theirs)];
  return !m || !t || before(m, t);
}

/**
 * A takeover records what the policy holds and writes nothing (its preview said so); the next
 * preview shows each change and the next up makes it. Only what its preview listed: a rule added
 * since is no one's to take unseen (its destroy would delete it). A saved plan's preview must have
 * listed it too.
 */
function takeOver(inputs: CheckedRuleSetInputs, current: Member[], saved: SavedSet | undefined, what: string) {
  const listedThen = takeoverShownFor(inputs.__urn);
  // No listing by a preview (in a run by the engine, which gives a URN): take nothing unseen.
  const inSaved = (r: Member) => !saved || isUnknownValue(saved.takeover) || (saved.takeover ?? []).includes(r.id);
  const taken = (isUnknownValue(listedThen) || (!listedThen && !inputs.__urn) ? current : current.filter((r) => (listedThen as Set<string> | undefined)?.has(r.id))).filter(inSaved);
  const since = current.filter((r) => !taken.includes(r)).map(named);
  if (!taken.length) {
    throw plainError(`${what}: the policy holds ${since.length} rule${since.length === 1 ? "" : "s"} its preview did not show (added since): ${listed(since)}; nothing was changed. ` +
      "Run `pulumi up` again: its preview shows what the takeover takes.");
  }
  if (since.length) report(inputs.__urn, `${what}: left ${since.length} rule${since.length === 1 ? "" : "s"} its preview did not list (added since), not recorded: ${listed(since)}. \`pulumi refresh\` records them; the preview after it shows what \`up\` will do to them.`, { warning: true });
  return { id: inputs.ipPolicyId, outs: outputs(inputs, taken, inputs) };
}
