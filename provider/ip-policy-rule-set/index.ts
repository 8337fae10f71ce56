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
import { sayWithheld } from "../server-text";
import { report } from "../engine";
import { policyAccessWords } from "../messages";
import { plainError } from "../errors";
import { changedFields, checkFields, DiffKind, Fields } from "../fields";
import { accessEffect } from "../access";
import { claim, claimed, claimPolicy, noteSetMembers, resourceLabel } from "../ownership";
import { checkConnection, keptInputs, PROFILE_FIELD } from "../profiles";
import { processState } from "../state";
import { boolean, CheckFailure, id, isUnknown, UNKNOWN } from "../validate";
import { apply, bindOwnMarkers } from "./apply";
import { create, previewCreate, previewUnknownCreate, reportAccessDone, reportAll, stillOnPolicy } from "./create";
import {
  checkRules,
  CheckedRuleSetInputs,
  declaredList,
  DeclaredRule,
  declaredRules,
  IpPolicyRuleSetInputs,
  isUnknownValue,
  keyedRules,
  secretRules,
} from "./declared";
import { foundRules, reconcile, refreshSaw, teardown } from "./guard";
import { byStack, Claimed, declaredForms, IpPolicyRuleSetMember, IpPolicyRuleSetOutputs, keyed, members } from "./live";
import { outputs, policyRules, whoseRules } from "./live";
import { decisionNotices, describe, driftWords, refusedWords, replacedInRunWords } from "./messages";
import { teardownNotices, teardownRefusedWords, unknownRulesWords } from "./messages";
import { plan, planDiff, summary } from "./plan";
import { fileChange } from "./plan-file";
import { foundAfterPreview, noteRefresh, previewRefreshSaw, promisesFor, promiseTerms, showPlan } from "./promise";
import { refuseDeleteWhenHolding } from "./saved-plan";

export { configure } from "../config";
export { create };
export type { CheckedRuleSetInputs, IpPolicyRuleSetInputs, IpPolicyRuleSetRule } from "./declared";
export type { IpPolicyRuleSetMember, IpPolicyRuleSetOutputs } from "./live";

const KIND = "IP policy rule set";

export const FIELDS: Fields<IpPolicyRuleSetInputs> = {
  ipPolicyId: { required: true, check: id(ID_PREFIX.ipPolicy), onChange: "replace" },
  // Whether the rules changed is the plan's to say (diff): no `same` here, which would plan twice more.
  rules: {
    required: ": a list of {cidr, action, description?, metadata?} (an empty list deletes every rule of the policy)",
    check: checkRules,
    canonical: keyedRules,
    onChange: "update",
  },
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
  const recorded = isUnknownValue(before)
    ? []
    : before.map((d) => ({ ...d, id: "", uri: "", createdAt: "" }) as IpPolicyRuleSetMember);
  const steps = summary(plan(Object.values(keyed(recorded)), declared), UNKNOWN);
  if (steps.length <= SUMMARY_STEPS && !secretRules(news)) return { steps };
  return { count: steps.length, digest: promiseTerms(news.profile).digestOf(steps) };
}

/**
 * Operations of this process that checked a set (by URN): their diff
 * shows the plan; a refresh's diff, which no check precedes, does not.
 */
function checkedSets(): { urns: string[] } {
  return processState<{ urns: string[] }>("rule-set-checks", () => ({ urns: [] }));
}

export async function check(olds: Partial<CheckedRuleSetInputs>, news: IpPolicyRuleSetInputs & { __urn?: string }) {
  const failures: CheckFailure[] = [];
  checkConnection(news, failures);
  const inputs = checkFields(FIELDS, news, failures) as unknown as CheckedRuleSetInputs;
  if (inputs.takeOver === false) delete inputs.takeOver; // false is the default: no diff against unset
  // as the outputs (and a refresh's inputs) keep it
  if (Array.isArray(inputs.__secrets) && !inputs.__secrets.length) delete inputs.__secrets;
  if (inputs.__urn && !checkedSets().urns.includes(inputs.__urn)) checkedSets().urns.push(inputs.__urn);
  if (!failures.length && !isUnknown(inputs.ipPolicyId)) {
    const clash = claimPolicy(
      "set",
      resourceLabel(inputs.__urn, "IpPolicyRuleSet", `IpPolicyRuleSet of ${inputs.ipPolicyId}`),
      inputs.ipPolicyId,
    );
    if (clash) failures.push({ property: "ipPolicyId", reason: clash });
  }
  // A new set (or one replaced: another policy, another profile) is created now: what will it do?
  if (!failures.length && (olds.ipPolicyId === undefined || changedFields(FIELDS, olds, inputs).replaces.length)) {
    if (!isUnknown(inputs.ipPolicyId) && !isUnknown(inputs.rules) && !isUnknown(inputs.takeOver))
      failures.push(...(await previewCreate(inputs)));
    else if (inputs.__urn) await previewUnknownCreate(inputs, inputs.__urn);
  }
  if (!failures.length) inputs.__plan = pulumiPlan(olds, inputs);
  return { inputs, failures };
}

export async function diff(_id: string, olds: IpPolicyRuleSetOutputs, news: CheckedRuleSetInputs) {
  const { replaces } = changedFields(FIELDS, olds, news);
  if (replaces.length)
    return {
      changes: true,
      replaces,
      deleteBeforeReplace: false,
      detailedDiff: Object.fromEntries(replaces.map((k) => [k, "update-replace" as DiffKind])),
    };
  // shown once per operation
  const urn = news.__urn && checkedSets().urns.includes(news.__urn) ? news.__urn : undefined;
  const recorded = members(olds.rules);
  noteSetMembers(recorded.map((r) => r.id)); // the set keeps them, changed or not: see ip-policy-rule.ts remove
  const declared = declaredRules(news.rules);
  const secret = secretRules(olds, news);
  const terms = promiseTerms(olds.profile);
  const what = `update IP policy rule set of ${olds.ipPolicyId}`;
  if (isUnknownValue(declared)) {
    // Which CIDRs the program declares is not known yet: no plan can say what up does; say what it may do.
    if (urn) {
      report(urn, unknownRulesWords(olds.ipPolicyId, Object.values(keyed(recorded)), secret));
      await showPlan(
        urn,
        { policy: olds.ipPolicyId, from: recorded.map(terms.seeRule), shown: { anyOf: recorded.map(terms.seeRule) } },
        what,
      );
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
    await showPlan(
      urn,
      {
        policy: olds.ipPolicyId,
        from: recorded.map(terms.seeRule),
        declared: declared.map(terms.seeDeclared),
        shown: { steps: p.steps.map(terms.see) },
      },
      what,
    );
  }
  return { changes: words !== "", replaces: [], detailedDiff: planDiff(p) };
}

export async function read(id: string, props: Partial<IpPolicyRuleSetOutputs> = {}) {
  const ipPolicyId = props.ipPolicyId ?? id;
  // Rules other stacks' resources made (their markers verify) are theirs: named, never recorded. A
  // marker that does not verify is a claim: its rule is drift, recorded, and named with its claim.
  const what = `read IP policy rule set of ${ipPolicyId}`;
  const live = await policyRules(ipPolicyId, props.profile, what, members(props.rules));
  sayWithheld(props.__urn, what, live.withheld);
  const { rest: rules, others, claims } = byStack(live, props.__urn);
  // Inputs as the live policy would declare them: after a refresh, `preview --diff` shows a rule
  // added, changed or deleted by hand as that rule. Read with nothing known of the set (an import),
  // they are what a program writes: a list (Pulumi writes the program from them).
  const declared = declaredForms(rules);
  const inputs = {
    ipPolicyId,
    rules: props.rules === undefined ? declaredList(declared) : declared,
    ...keptInputs(props),
    ...(props.__plan !== undefined ? { __plan: props.__plan } : {}),
  };
  if (props.rules !== undefined) sayDrift(props, rules, others, claims);
  return { id, props: outputs({ ipPolicyId }, rules, props), inputs };
}

/**
 * A refresh names what it found changed (the diff of `rules` is hidden: it would print every rule),
 * and records the rules it found added or changed (what it saw: guard.ts refreshSaw): this command's
 * destroy leaves them (its preview cannot name them), and its update counts on another stack's rule
 * only as the refresh of its preview saw it.
 */
function sayDrift(
  props: Partial<IpPolicyRuleSetOutputs>,
  rules: IpPolicyRuleSetMember[],
  others: Claimed[],
  claims: Claimed[],
): void {
  const recorded = members(props.rules);
  const saw = refreshSaw(recorded, rules, others);
  if (props.__urn) noteRefresh(props.__urn, foundRules(saw).map(promiseTerms(props.profile).seeRule));
  // What the changes found did to the policy's access: a drift gate's log names the exposure.
  const access = policyAccessWords(String(props.ipPolicyId), accessEffect(recorded, rules), "drift");
  const words = driftWords(String(props.ipPolicyId), saw, secretRules(props), claims, access);
  if (words) report(props.__urn, words);
}

export async function update(id: string, olds: IpPolicyRuleSetOutputs, news: CheckedRuleSetInputs) {
  const what = `update IP policy rule set of ${news.ipPolicyId}`;
  claim(KIND, news.ipPolicyId, what);
  // The plan its preview showed (diff made it from the same state and program), checked against the
  // policy as it is now: a killed or failed run, or a hand, may have changed it.
  const recorded = members(olds.rules);
  const declared = declaredRules(news.rules) as DeclaredRule[];
  const terms = promiseTerms(news.profile);
  const now = { policy: news.ipPolicyId, from: recorded.map(terms.seeRule), declared: declared.map(terms.seeDeclared) };
  const { promises, saved } = promisesFor(news.__urn, now, what);
  const live = await policyRules(news.ipPolicyId, news.profile, what, recorded, true);
  stillOnPolicy(live, news.__urn, recorded, what, news.ipPolicyId);
  const current = live.rules;
  const saw = previewRefreshSaw(news.__urn);
  const secret = secretRules(olds, news);
  const decided = reconcile(plan(recorded, declared), {
    recorded,
    declared,
    live: current,
    promises,
    see: terms.see,
    ...whoseRules(live, recorded, news.__urn),
    previewSaw: new Set(current.filter((r) => saw(terms.seeRule(r))).map((r) => r.id)),
    planOpens: saved?.access ? fileChange(saved.access).opens : undefined,
  });
  if (decided.refused.length) throw plainError(refusedWords(what, decided.refused, secret));
  // A failure halfway is a partial update: the engine keeps the old inputs, and so the outputs keep their __plan.
  const before = current.filter((r) => !decided.strangers.includes(r));
  const target = { ...news, __plan: olds.__plan };
  const stepped = new Set(decided.steps.flatMap((s) => ("rule" in s ? [s.rule.id] : [])));
  const applied = await apply(target, before, decided.steps, id, what);
  const rules = await bindOwnMarkers(target, applied, live, stepped, recorded, { id, what });
  reportAccessDone(news.__urn, news.ipPolicyId, accessEffect(before, rules), saved?.access, decided.steps.length > 0);
  reportAll(news.__urn, decisionNotices(what, decided, secret));
  return { outs: outputs(news, rules, news) };
}

async function remove(id: string, props: IpPolicyRuleSetOutputs): Promise<void> {
  const ipPolicyId = props.ipPolicyId ?? id;
  const what = `delete IP policy rule set of ${ipPolicyId}`;
  // Replaced by a set of this run on the same policy (another profile of one account, say): that
  // set has recorded these rules as its own; deleting them would empty the policy behind its back.
  if (claimed(KIND, ipPolicyId)) return report(props.__urn, replacedInRunWords(what), { warning: true });
  refuseDeleteWhenHolding(what);
  const recorded = members(props.rules);
  const live = await policyRules(ipPolicyId, props.profile, what, recorded, true);
  // Rules other stacks' resources made are theirs (their markers verify): never deleted, and they do
  // not stop a destroy. A rule whose marker only claims so is as any rule added by hand.
  const { rest: current, others, claims } = byStack(live, props.__urn);
  const handedOver = whoseRules(live, recorded, props.__urn).claimedElsewhere;
  const decided = teardown({ recorded, live: current, handedOver, unshown: foundAfterPreview(props.__urn) });
  if (decided.kind === "refused") {
    throw plainError(teardownRefusedWords(what, decided, secretRules(props), claims));
  }
  const set = { ipPolicyId, profile: props.profile, __urn: props.__urn };
  await apply(set, current, decided.steps, id, what, { deleting: true });
  reportAll(props.__urn, teardownNotices(what, decided, others));
}
export { remove as delete };
