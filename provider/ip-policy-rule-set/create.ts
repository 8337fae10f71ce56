// A new set: what its preview says it will do (it lists the policy: a preview fails where the create
// would), and its create. A policy has one set: a policy whose rules another stack's set made (their
// markers say so) is refused; and of two sets of different stacks that start on one policy at once,
// the one whose first rule came first goes on, the other deletes what it made and fails, naming the
// first. Rules other stacks' resources made are left, not recorded; any other rule is taken only with
// takeOver (or, exactly as declared, ACCESSCTL_ADOPT_EXISTING=1: an interrupted run's, whose marker
// names an earlier attempt, which is no proof that this stack made it: stack names are not unique).
// Walks of the account (every rule of it, ⌈N/100⌉ requests): one per provider process. The view before
// the first rule is what this command listed already (viewBeforeFirst); the one walk after the first
// rule checks it again, and decides which of two sets came first (aloneOnPolicy).
import { IP_POLICY_RULE_ANSWER, IpPolicyRuleBody } from "../../contract/ip-policy-rule";
import { AccessEffect, accessEffect, againstPlan } from "../access";
import { profileSource } from "../config";
import { report } from "../engine";
import { againstPlanWords, policyAccessWords } from "../messages";
import { plainError } from "../errors";
import { api } from "../http/api";
import { canonicalCidr, rulePath } from "../ip-policy-rule";
import { rulesListedSinceWrite } from "../list-reads";
import { adoptExistingAllowed, claim, Marker } from "../ownership";
import { listedElsewhere, noteListed } from "../run-record";
import { CheckFailure, isUnknown } from "../validate";
import { AfterFirst, apply } from "./apply";
import {
  CheckedRuleSetInputs,
  DeclaredRule,
  declaredRules,
  isUnknownValue,
  secretRules,
  UNKNOWN_VALUE,
} from "./declared";
import { adoptableRule, cameFirst, exactlyAsDeclared, holdToShown, LeftUndone } from "./guard";
import { oneSetOnPolicy, OtherSet, takenOver } from "./guard";
import { byStack, IpPolicyRuleSetMember, keyed, LivePolicy, livePolicy, named, outputs, policyRules } from "./live";
import { alreadyHoldsWords, leftUndoneNotices, listed, Notice } from "./messages";
import { describe, oneSetOnlyWords, othersNotices, plural, requests } from "./messages";
import { plan, Step } from "./plan";
import { noteTakeoverShown, promisesFor, promiseTerms, showPlan, takeoverShownFor } from "./promise";
import { FileAccess, fileChange } from "./plan-file";
import { SavedSet } from "./saved-plan";

const KIND = "IP policy rule set";
type Member = IpPolicyRuleSetMember;

/**
 * A policy's rules by whose they are, for the set `urn`: other stacks' (a set's, or another
 * resource's; their markers verify), and the rest. `claimedSets`: rules whose markers name another
 * stack's set, verified or not: enough to back off (two sets started at once), never to leave a rule.
 */
function sortOut(live: LivePolicy, urn: unknown) {
  const { rest, others, claims } = byStack(live, urn);
  const ofSet = (o: { maker: Marker }) => !!o.maker.resource?.startsWith("IpPolicyRuleSet::");
  return { others, claims, otherSets: others.filter(ofSet), claimedSets: [...others, ...claims].filter(ofSet), rest };
}

/**
 * ACCESSCTL_ADOPT_EXISTING=1 takes a rule exactly as declared (what an interrupted run of this stack
 * can have made); never one whose marker names another stack, verified or not.
 */
const adoptable = (found: ReturnType<typeof sortOut>, declared: DeclaredRule[], r: Member) =>
  adoptableRule(r, {
    adoptExisting: adoptExistingAllowed(),
    declared,
    theirs: new Set(found.claims.map((c) => c.rule.id)),
  });

export async function previewUnknownCreate(inputs: CheckedRuleSetInputs, urn: string): Promise<void> {
  const takeover = inputs.takeOver === true || isUnknown(inputs.takeOver);
  await showPlan(
    urn,
    {
      policy: String(inputs.ipPolicyId),
      from: [],
      shown: { anyOf: [] },
      ...(takeover ? { takeover: UNKNOWN_VALUE } : {}),
    },
    "create IpPolicyRuleSet",
  );
  if (!takeover) return;
  const policy = isUnknown(inputs.ipPolicyId) ? "the set's policy" : inputs.ipPolicyId;
  report(
    urn,
    `plan for ${policy}: not known yet (it depends on other resources); with takeOver, up takes over whatever rules ` +
      `the policy holds then, as they are`,
  );
  noteTakeoverShown(urn, UNKNOWN_VALUE);
}

/**
 * A create's plan, shown under the resource at preview, from a listing of the policy (one walk of the
 * account): a preview fails where the create would (the policy managed by another stack's set, or
 * holding rules without takeOver); a takeover takes every rule over as it is and writes nothing, the
 * next `up` does the rest. Returns check's failures.
 */
export async function previewCreate(inputs: CheckedRuleSetInputs): Promise<CheckFailure[]> {
  const declared = declaredRules(inputs.rules) as DeclaredRule[];
  const urn = inputs.__urn;
  const takeover = inputs.takeOver === true;
  const listing = await listForPreview(inputs);
  const found = listing.live ? sortOut(listing.live, urn) : undefined;
  // a listing that failed promised to take none
  const taken = takeover ? (found?.rest ?? []).map((r) => r.id) : undefined;
  if (urn) await promiseCreate(urn, inputs, declared, taken);
  const head = `plan for ${inputs.ipPolicyId}`;
  if (!found) {
    if (takeover)
      report(
        urn,
        `${head}: takeOver: could not list the policy to say what the takeover will take (${listing.error}); up will ` +
          `take none of its rules`,
        { warning: true },
      );
    else {
      const creates = `create ${plural(declared.length, "rule")}: ${requests(declared.length)}`;
      report(urn, `${head}: ${creates} (the policy could not be listed: ${listing.error})`);
    }
    return [];
  }
  const what = `create IP policy rule set of ${inputs.ipPolicyId}`;
  const yields = oneSetOnPolicy([], found.otherSets);
  const nothing = "up would change nothing";
  if (yields) return [{ property: "ipPolicyId", reason: oneSetOnly(what, inputs.ipPolicyId, yields, nothing).message }];
  const refused = found.rest.filter((r) => !adoptable(found, declared, r));
  if (!takeover && refused.length)
    return [
      {
        property: "takeOver",
        reason: alreadyHolds(what, refused).message.replace("nothing was changed", "up would change nothing"),
      },
    ];
  reportOthers(urn, `${head}`, found.others);
  if (!takeover) return (previewAdoption(inputs, declared, found.rest), []);
  previewTakeover(inputs, declared, found.rest, head);
  return [];
}

/** What this create's preview shows, as this command's promise (promise.ts showPlan), and the takeover it named. */
async function promiseCreate(urn: string, inputs: CheckedRuleSetInputs, declared: DeclaredRule[], taken?: string[]) {
  const terms = promiseTerms(inputs.profile);
  await showPlan(
    urn,
    {
      policy: inputs.ipPolicyId,
      from: [],
      declared: declared.map(terms.seeDeclared),
      shown: { steps: plan([], declared).steps.map(terms.see) },
      ...(taken ? { takeover: taken } : {}),
    },
    `create IP policy rule set of ${inputs.ipPolicyId}`,
  );
  if (taken) noteTakeoverShown(urn, taken);
}

/** A takeover's preview: what it takes (writing nothing now) and what the next up then does. */
function previewTakeover(inputs: CheckedRuleSetInputs, declared: DeclaredRule[], current: Member[], head: string) {
  const urn = inputs.__urn;
  if (!current.length) {
    const creates = `create ${declared.length}: ${requests(declared.length)}`;
    return report(urn, `${head}: takeOver: the policy holds no rule; ${creates}`);
  }
  const asIs = current.filter((r) => exactlyAsDeclared(declared, r)).length;
  const undeclared = current.filter((r) => !declared.some((d) => d.cidr === canonicalCidr(r.cidr))).length;
  const then = describe(plan(Object.values(keyed(current)), declared), secretRules(inputs));
  report(
    urn,
    `${head}: take over the ${plural(current.length, "rule")} the policy holds ` +
      `(${asIs} as declared, ${undeclared} not declared), ` +
      `writing nothing now; ${then ? `the next up then: ${then}` : "nothing more to do"}`,
  );
}

/** The policy's rules, for a preview that says what a create takes over; or why they could not be listed. */
async function listForPreview(inputs: CheckedRuleSetInputs): Promise<{ live?: LivePolicy; error?: string }> {
  try {
    const what = `preview the ${inputs.takeOver ? "takeover" : "create"} of ${inputs.ipPolicyId}`;
    const live = await viewBeforeFirst(inputs, what);
    noteListed(
      inputs.ipPolicyId,
      live.rules.map((r) => r.id),
    ); // for the update of this command: see viewBeforeFirst
    return { live };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

/**
 * The policy's rules as this command knows them already, for a new set's preview and its create
 * before the first rule: a whole walk of this process with no write since, however old; else the
 * rules the preview's walk found on the policy (the run record holds their ids), each read again
 * with its GET (none for an empty policy); else a walk. Not fresh, and need not be: before anything
 * more than its first rule, the create walks the account again and checks all of it (aloneOnPolicy);
 * what it refuses from this view it refuses with nothing written.
 */
async function viewBeforeFirst(inputs: CheckedRuleSetInputs, what: string): Promise<LivePolicy> {
  const source = profileSource(inputs.profile);
  const ids = rulesListedSinceWrite(source, inputs.ipPolicyId) ? undefined : listedElsewhere(inputs.ipPolicyId);
  if (!ids) return policyRules(inputs.ipPolicyId, inputs.profile, what, [], "anyAge");
  const bodies: IpPolicyRuleBody[] = [];
  for (const id of ids) {
    const read = { what: `${what}: read IP policy rule ${id}`, allow404: true, expect: IP_POLICY_RULE_ANSWER, source };
    const res = await api<IpPolicyRuleBody>("GET", rulePath(id), read);
    if (res.status !== 404 && res.body.ip_policy.id === inputs.ipPolicyId) bodies.push(res.body);
  }
  return livePolicy(bodies, source);
}

/**
 * A create's plan: what it takes over (rules exactly as declared,
 * under ACCESSCTL_ADOPT_EXISTING=1) and what it creates.
 */
function previewAdoption(inputs: CheckedRuleSetInputs, declared: DeclaredRule[], current: Member[]): void {
  const toCreate = declared.filter((d) => !current.some((r) => canonicalCidr(r.cidr) === d.cidr)).length;
  const creates = `create ${plural(toCreate, "rule")}: ${requests(toCreate)}`;
  const access = policyAccessWords(inputs.ipPolicyId, accessEffect(current, declared), "plan");
  const n = current.length;
  const takes = n ? `take over ${plural(n, "rule")} exactly as declared (ACCESSCTL_ADOPT_EXISTING=1), ` : "";
  report(inputs.__urn, `plan for ${inputs.ipPolicyId}: ${takes}${creates}\n${access}`);
}

export async function create(inputs: CheckedRuleSetInputs) {
  const what = `create IP policy rule set of ${inputs.ipPolicyId}`;
  claim(KIND, inputs.ipPolicyId, what);
  const declared = declaredRules(inputs.rules) as DeclaredRule[];
  const terms = promiseTerms(inputs.profile);
  const { promises, saved } = promisesFor(
    inputs.__urn,
    { policy: inputs.ipPolicyId, from: [], declared: declared.map(terms.seeDeclared) },
    what,
  );
  let found = sortOut(await viewBeforeFirst(inputs, what), inputs.__urn);
  // A takeover writes nothing, and no walk checks it after: it records the policy as it is now.
  if (inputs.takeOver === true && found.rest.length) {
    found = sortOut(await policyRules(inputs.ipPolicyId, inputs.profile, what, [], true), inputs.__urn);
  }
  const yields = oneSetOnPolicy([], found.otherSets);
  if (yields) throw oneSetOnly(what, inputs.ipPolicyId, yields, "nothing was changed");
  if (inputs.takeOver === true && found.rest.length) return takeOver(inputs, found.rest, saved, what);
  // ACCESSCTL_ADOPT_EXISTING=1 (after a killed first `up`) takes only what that run can have made:
  // rules exactly as declared. Anything else needs the program to say takeOver: true.
  const refused = found.rest.filter((r) => !adoptable(found, declared, r));
  if (refused.length) throw alreadyHolds(what, refused);
  const current = found.rest;
  const held = holdToShown(plan(Object.values(keyed(current)), declared), promises, terms.see);
  const rules = await apply(inputs, current, held.steps, inputs.ipPolicyId, what, {
    afterFirst: aloneOnPolicy(inputs, what),
  });
  // Against the plan's terms: a new set's plan is from no rule (the rules taken over exactly as declared are its own).
  if (saved?.access) reportAccessDone(inputs.__urn, inputs.ipPolicyId, accessEffect([], rules), saved.access, true);
  reportOthers(inputs.__urn, what, found.others);
  reportLeftUndone(inputs.__urn, what, held.left);
  return { id: inputs.ipPolicyId, outs: outputs(inputs, rules, inputs) };
}

function alreadyHolds(what: string, refused: Member[], outcome = "nothing was changed"): Error {
  return plainError(alreadyHoldsWords(what, Object.values(keyed(refused)), outcome, adoptExistingAllowed()));
}

/** The one error of a set that yields a policy to another stack's set (guard.ts oneSetOnPolicy, cameFirst). */
const oneSetOnly = (what: string, ipPolicyId: string, otherSets: OtherSet[], outcome: string) =>
  plainError(oneSetOnlyWords(what, ipPolicyId, otherSets, outcome));

/**
 * What an update did to the policy's access: held to a reviewed plan's file, against what it showed
 * (`did exactly what the plan showed`, or less); else what it did, when it did anything.
 */
export function reportAccessDone(
  urn: string | undefined,
  policy: string,
  done: AccessEffect,
  planned: FileAccess | undefined,
  wrote: boolean,
): void {
  if (planned && "opens" in done) report(urn, againstPlanWords(policy, againstPlan(fileChange(planned), done)));
  else if (wrote || planned) report(urn, policyAccessWords(policy, done, "done"));
}

/** Steps the preview of this run did not show, left undone: a warning under the set. */
export const reportLeftUndone = (urn: string | undefined, what: string, left: LeftUndone[]) =>
  reportAll(urn, leftUndoneNotices(what, left));

export const reportOthers = (
  urn: string | undefined,
  what: string,
  others: { rule: Member; maker: Marker; pending?: string }[],
) => reportAll(urn, othersNotices(what, others));

export function reportAll(urn: string | undefined, notices: Notice[]): void {
  for (const n of notices) report(urn, n.text, n.warning ? { warning: true } : undefined);
}

/**
 * After the create's first step alone, the policy is listed again (the create's one walk, started
 * after that rule was made): if another stack's set made rules there meanwhile (two sets started on
 * one policy at once), the set whose earliest rule came first goes on; the other deletes the rules
 * it made, and fails naming the first. Both see the same rules, and decide alike. A rule of no other
 * stack that came since the view the create began from (viewBeforeFirst) is refused as that view's
 * would have been: the set deletes what it made, and fails naming it.
 */
function aloneOnPolicy(inputs: CheckedRuleSetInputs, what: string): AfterFirst {
  return async (afterFirst, current) => {
    const made = afterFirst.filter((r) => !current.includes(r));
    const found = sortOut(await policyRules(inputs.ipPolicyId, inputs.profile, what, [], true), inputs.__urn);
    // (A set's rule, its marker verified or not, is the race's: cameFirst decides it.)
    const raced = (r: Member) => found.claimedSets.some((o) => o.rule.id === r.id);
    const since = found.rest.filter((r) => !afterFirst.some((a) => a.id === r.id) && !raced(r));
    const undo = made.map((rule): Step => ({ op: "delete", rule }));
    const deleted = `this set deleted the ${plural(made.length, "rule")} it had made`;
    if (
      !cameFirst(
        made,
        found.claimedSets.map((o) => o.rule),
      )
    ) {
      const outcome = `it started on the policy at the same time as this one and came first, so ${deleted}`;
      return { undo, error: oneSetOnly(what, inputs.ipPolicyId, found.claimedSets, outcome) };
    }
    if (since.length) {
      return {
        undo,
        error: alreadyHolds(what, since, `they came since this command listed the policy, so ${deleted}`),
      };
    }
    return undefined;
  };
}

/**
 * An update goes on only while the policy is this set's: where another stack's set has rules (this
 * set's create failed before its first rule, and that one came since), only if this set's own
 * earliest rule there came first. Else it fails before any write, naming that set.
 */
export function stillOnPolicy(
  live: LivePolicy,
  urn: unknown,
  recorded: Member[],
  what: string,
  ipPolicyId: string,
): void {
  const known = new Set(recorded.map((r) => r.id));
  const yields = oneSetOnPolicy(
    live.rules.filter((r) => known.has(r.id)),
    sortOut(live, urn).otherSets,
  );
  if (yields) throw oneSetOnly(what, ipPolicyId, yields, "nothing was changed");
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
  const shown =
    isUnknownValue(listedThen) || (!listedThen && !inputs.__urn) ? "any" : (listedThen ?? new Set<string>());
  const inSaved = !saved || isUnknownValue(saved.takeover) ? "any" : new Set(saved.takeover ?? []);
  const taken = takenOver(current, [shown, inSaved]);
  const since = current.filter((r) => !taken.includes(r)).map(named);
  if (!taken.length) {
    throw plainError(
      `${what}: the policy holds ${plural(since.length, "rule")} its preview did not show ` +
        `(added since): ${listed(since)}; nothing was changed. ` +
        "Run `pulumi up` again: its preview shows what the takeover takes.",
    );
  }
  if (since.length) {
    report(
      inputs.__urn,
      `${what}: left ${plural(since.length, "rule")} its preview did not list (added since), ` +
        `not recorded: ${listed(since)}. \`pulumi refresh\` records them; the preview after it shows what \`up\` ` +
        `will ` +
        "do to them.",
      { warning: true },
    );
  }
  return { id: inputs.ipPolicyId, outs: outputs(inputs, taken, inputs) };
}
