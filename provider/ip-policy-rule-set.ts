// IpPolicyRuleSet: every rule of one IP policy as one resource (authoritative). This module is the
// dynamic provider itself (see provider/api-key.ts). The set's id is its policy's id: a policy
// has one set (two in one stack are refused; see claim below and the SDK's registry).
//
// check canonicalizes and sorts the declared rules (no diff for order, IPv6 spelling, unset vs "");
// diff compares them with the rules in the outputs by canonical CIDR and writes the plan to stderr
// (Pulumi shows it under the resource); create and update list the policy, plan the fewest calls
// (a changed description or a moved CIDR of the same action is one PATCH) and record in their
// outputs, even when they fail halfway, exactly the rules the policy holds.
import * as ipaddr from "ipaddr.js";
import { ID_PREFIX } from "../contract/common";
import { IP_POLICY_RULE_ANSWER, IP_POLICY_RULES_PATH, IpPolicyRuleBody, IpPolicyRuleCreateBody, IpPolicyRuleUpdateBody, RULE_ACTIONS, RuleAction } from "../contract/ip-policy-rule";
import { api, apiPath } from "./http/api";
import { ApiFailure } from "./http/failures";
import { plainError } from "./errors";
import { asDeclared, changedFields, checkFields, createBody, Fields, liveInputs, outputsOf, updateBody } from "./fields";
import { canonicalCidr, cidr, FIELDS as RULE_FIELDS } from "./ip-policy-rule";
import { listEverything, listsChanged } from "./list-reads";
import { adoptExistingAllowed, claim, claimed } from "./ownership";
import { checkConnection, keptInputs, PROFILE_FIELD, ProfileInput } from "./profiles";
import { profileSource } from "./config";
import { boolean, CheckFailure, id, isUnknown } from "./validate";

export { configure } from "./config";

/** One declared rule of a set. */
export interface IpPolicyRuleSetRule {
  /** An IPv4 or IPv6 range (`10.0.0.0/8`); each CIDR once per set, in any spelling. */
  cidr: string;
  /** `allow` or `deny`. Changing it deletes the rule, then creates it (the policy holds a CIDR once). */
  action: RuleAction;
  /** Optional; at most 255 bytes of UTF-8. Unset and "" are the same. */
  description?: string;
  /** Optional; at most 4096 bytes of UTF-8. Unset and "" are the same. */
  metadata?: string;
}

/** The inputs of an IpPolicyRuleSet; the SDK's IpPolicyRuleSetArgs is made from this (its docs too). */
export interface IpPolicyRuleSetInputs extends ProfileInput {
  /** The IP policy (`ipp_…`) whose rules this resource owns, all of them. Changing it replaces the set. */
  ipPolicyId: string;
  /** Every rule the policy should hold; any other rule of the policy is deleted by `up`. */
  rules: IpPolicyRuleSetRule[];
  /**
   * Creating the set on a policy that already holds rules fails, naming them, unless this is true:
   * then the rules with a declared CIDR are brought to the declaration and the others are recorded
   * as they are (the next preview shows them as to be deleted, the next `up` deletes them).
   */
  takeOver?: boolean;
}

/** A rule of the policy as it stands. */
export interface IpPolicyRuleSetMember {
  id: string;
  cidr: string;
  action: RuleAction;
  description: string;
  metadata: string;
  uri: string;
  createdAt: string;
}

export interface IpPolicyRuleSetOutputs {
  ipPolicyId: string;
  /** Every rule of the policy, sorted by CIDR. */
  rules: IpPolicyRuleSetMember[];
  takeOver?: boolean;
  profile?: string;
}

const KIND = "IP policy rule set";
const CONCURRENCY = 16; // creates, patches and deletes at once; the account's limiter paces them
const SHOWN = 5; // CIDRs named in a plan or an error

/** A rule of the set is an IP policy rule: checked, compared, sent and read back by the rule's own table. */
const MEMBER_FIELDS: Fields<IpPolicyRuleSetRule> = { cidr: RULE_FIELDS.cidr, action: RULE_FIELDS.action, description: RULE_FIELDS.description, metadata: RULE_FIELDS.metadata };

/** A declared rule with null and "" taken as unset, as for every optional field of a rule. */
function withoutEmpty(rule: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(rule).filter(([key, v]) => !(key in MEMBER_FIELDS) || (v !== null && v !== "")));
}

/** Every declared rule: each problem named by its place in the program's list (`rules[3].cidr …`). */
function checkRules(value: unknown): string | CheckFailure[] | undefined {
  if (!Array.isArray(value)) return "must be a list of rules: [{cidr, action, description?, metadata?}, …]";
  const failures: CheckFailure[] = [];
  const seen: Record<string, number> = {};
  value.forEach((rule, i) => {
    const at = `rules[${i}]`;
    if (isUnknown(rule)) return;
    if (rule === null || typeof rule !== "object" || Array.isArray(rule)) return void failures.push({ property: "", reason: `${at} must be an object {cidr, action, description?, metadata?}` });
    checkFields(MEMBER_FIELDS, withoutEmpty(rule), failures, { path: at, noun: "a rule" });
    if (typeof rule.cidr === "string" && !isUnknown(rule.cidr) && !cidr(rule.cidr)) {
      const key = canonicalCidr(rule.cidr);
      if (key in seen) failures.push({ property: "", reason: `${at}.cidr ${JSON.stringify(rule.cidr)} is declared twice: rules[${seen[key]}] is the same range (${key}); a policy holds a CIDR once` });
      else seen[key] = i;
    }
  });
  return failures.length ? failures : undefined;
}

/** The declared rules as check hands them on: each as the rule's table hands it on (canonical CIDR, no empty text), sorted by CIDR. */
function canonicalRules(rules: IpPolicyRuleSetRule[]): IpPolicyRuleSetRule[] {
  // A rule not known yet (an Output of a whole object) is handed on as it is; the order waits for it.
  const out = rules.map((r) => (isUnknown(r) ? r : (checkFields(MEMBER_FIELDS, withoutEmpty(r as unknown as Record<string, unknown>), []) as unknown as IpPolicyRuleSetRule)));
  return out.some((r) => isUnknown(r) || isUnknown(r.cidr)) ? out : out.sort((a, b) => compareCidrs(a.cidr, b.cidr));
}

/** A stable order: IPv4 before IPv6, then by address, then by prefix length. */
export function compareCidrs(a: string, b: string): number {
  const key = (c: string) => {
    const [address, prefix] = c.split("/");
    try {
      const bytes = ipaddr.parse(address).toByteArray();
      return [bytes.length, ...bytes, Number(prefix)];
    } catch {
      return undefined;
    }
  };
  const ka = key(a);
  const kb = key(b);
  if (!ka || !kb) return a < b ? -1 : a > b ? 1 : 0;
  for (let i = 0; i < Math.max(ka.length, kb.length); i++) if (ka[i] !== kb[i]) return (ka[i] ?? -1) - (kb[i] ?? -1);
  return 0;
}

const FIELDS: Fields<IpPolicyRuleSetInputs> = {
  ipPolicyId: { required: true, check: id(ID_PREFIX.ipPolicy), onChange: "replace" },
  rules: { required: ": a list of {cidr, action, description?, metadata?} (an empty list deletes every rule of the policy)", check: checkRules, canonical: canonicalRules },
  takeOver: { check: boolean },
  profile: PROFILE_FIELD,
};

const rulePath = (id: string) => IP_POLICY_RULES_PATH + apiPath`/${id}`;

function member(body: IpPolicyRuleBody): IpPolicyRuleSetMember {
  return { id: body.id, ...outputsOf<Required<IpPolicyRuleSetRule>>(MEMBER_FIELDS, body), uri: body.uri, createdAt: body.created_at };
}

function sorted(rules: IpPolicyRuleSetMember[]): IpPolicyRuleSetMember[] {
  return [...rules].sort((a, b) => compareCidrs(canonicalCidr(a.cidr), canonicalCidr(b.cidr)) || (a.id < b.id ? -1 : 1));
}

/** A rule as a program would declare it (canonical CIDR, description/metadata left out when empty). */
function declaredForm(r: IpPolicyRuleSetMember): IpPolicyRuleSetRule {
  return liveInputs<IpPolicyRuleSetRule>(MEMBER_FIELDS, r);
}

function outputs(inputs: { ipPolicyId: string }, rules: IpPolicyRuleSetMember[], kept: Record<string, any>): IpPolicyRuleSetOutputs {
  return { ipPolicyId: inputs.ipPolicyId, rules: sorted(rules), ...keptInputs(kept) };
}

/** Every rule of the policy, from the account's rule list (the shared walk of list-reads). */
async function policyRules(ipPolicyId: string, profile: unknown, what: string, known: IpPolicyRuleSetMember[] = []): Promise<IpPolicyRuleSetMember[]> {
  const source = profileSource(profile);
  const all = await listEverything<IpPolicyRuleBody>({ list: IP_POLICY_RULES_PATH, field: "ip_policy_rules", path: IP_POLICY_RULES_PATH, what, expect: IP_POLICY_RULE_ANSWER, source });
  const rules = all.filter((r) => r.ip_policy.id === ipPolicyId).map(member);
  // A rule of the state missing from the list is gone only by its own believed 404 (http/trust.ts
  // believe404): a list read with another account's key is complete, and empty.
  for (const r of known) {
    if (rules.some((x) => x.id === r.id)) continue;
    const res = await api<IpPolicyRuleBody>("GET", rulePath(r.id), { what: `${what}: read IP policy rule ${r.id}`, allow404: true, expect: IP_POLICY_RULE_ANSWER, source });
    if (res.status !== 404 && res.body.ip_policy.id === ipPolicyId) rules.push(member(res.body));
  }
  return rules;
}

// ---- planning -------------------------------------------------------------------------------

interface Plan {
  creates: IpPolicyRuleSetRule[];
  /** One PATCH each: description/metadata, and `cidr` when a rule is reused for another CIDR. */
  patches: { rule: IpPolicyRuleSetMember; to: IpPolicyRuleSetRule }[];
  /** An action changed: delete the rule, then create the CIDR with the new action. */
  flips: { rule: IpPolicyRuleSetMember; to: IpPolicyRuleSetRule }[];
  deletes: IpPolicyRuleSetMember[];
  /** Undeclared rules left as they are (a create with takeOver: recorded, deleted by the next up). */
  kept: IpPolicyRuleSetMember[];
}

/** The declared rule for each canonical CIDR. */
function byDeclaredCidr(rules: IpPolicyRuleSetRule[]): Record<string, IpPolicyRuleSetRule> {
  const out: Record<string, IpPolicyRuleSetRule> = {};
  for (const d of rules) out[canonicalCidr(d.cidr)] = d;
  return out;
}

/** A rule exactly as declared: what an interrupted run of this stack can have made (ACCESSCTL_ADOPT_EXISTING). */
function exactlyAsDeclared(declared: Record<string, IpPolicyRuleSetRule>, r: IpPolicyRuleSetMember): boolean {
  const d = declared[canonicalCidr(r.cidr)];
  return d !== undefined && asDeclared(MEMBER_FIELDS, r, d);
}

/**
 * The calls that bring `current` to `declared`. Undeclared rules are deleted when `deletable`
 * says so (else kept); a deletable one is first reused, by one PATCH of its cidr, for a declared
 * CIDR of the same action that no rule holds yet.
 */
export function plan(current: IpPolicyRuleSetMember[], declared: IpPolicyRuleSetRule[], deletable: (r: IpPolicyRuleSetMember) => boolean): Plan {
  const p: Plan = { creates: [], patches: [], flips: [], deletes: [], kept: [] };
  const byCidr: Record<string, IpPolicyRuleSetMember> = {};
  for (const r of current) byCidr[canonicalCidr(r.cidr)] = r;
  const wanted: Record<string, true> = {};
  const added: Record<string, IpPolicyRuleSetRule[]> = {};
  for (const d of declared) {
    const key = canonicalCidr(d.cidr);
    wanted[key] = true;
    const r = byCidr[key];
    if (!r) {
      (added[d.action] ??= []).push(d);
      continue;
    }
    const { replaces, updates } = changedFields(MEMBER_FIELDS, r, d); // the same CIDR: its action, or text
    if (replaces.length) p.flips.push({ rule: r, to: d });
    else if (updates.length) p.patches.push({ rule: r, to: d });
  }
  const removed: Record<string, IpPolicyRuleSetMember[]> = {};
  for (const r of current) {
    if (wanted[canonicalCidr(r.cidr)]) continue;
    if (deletable(r)) (removed[r.action] ??= []).push(r);
    else p.kept.push(r);
  }
  for (const action of RULE_ACTIONS) {
    const adds = added[action] ?? [];
    const rems = removed[action] ?? [];
    const n = Math.min(adds.length, rems.length);
    for (let i = 0; i < n; i++) p.patches.push({ rule: rems[i], to: adds[i] });
    p.creates.push(...adds.slice(n));
    p.deletes.push(...rems.slice(n));
  }
  return p;
}

function listed(cidrs: string[]): string {
  return cidrs.slice(0, SHOWN).join(", ") + (cidrs.length > SHOWN ? `, … (${cidrs.length - SHOWN} more)` : "");
}

/** The plan in words: `create 3 (a, b, c); update 1 (…); …`; "" when there is nothing to do. */
export function describePlan(p: Plan): string {
  const moved = p.patches.filter((x) => canonicalCidr(x.rule.cidr) !== canonicalCidr(x.to.cidr));
  const edited = p.patches.filter((x) => canonicalCidr(x.rule.cidr) === canonicalCidr(x.to.cidr));
  const parts = [
    [`create ${p.creates.length}`, p.creates.map((d) => d.cidr)],
    [`move ${moved.length} (one PATCH of cidr each)`, moved.map((x) => `${x.rule.cidr} → ${x.to.cidr}`)],
    [`update ${edited.length}`, edited.map((x) => x.to.cidr)],
    [`replace ${p.flips.length} (action changed: delete, then create)`, p.flips.map((x) => `${x.to.cidr} ${x.rule.action} → ${x.to.action}`)],
    [`delete ${p.deletes.length}`, p.deletes.map((r) => `${r.cidr} ${r.action}`)],
  ] as const;
  return parts.filter(([, items]) => items.length).map(([head, items]) => `${head}: ${listed([...items])}`).join("; ");
}

// ---- the resource -----------------------------------------------------------------------------

export async function check(_olds: IpPolicyRuleSetInputs, news: IpPolicyRuleSetInputs) {
  const failures: CheckFailure[] = [];
  checkConnection(news, failures);
  const inputs = checkFields(FIELDS, news, failures);
  if (inputs.takeOver === false) delete inputs.takeOver; // false is the default: no diff against unset
  return { inputs, failures };
}

export async function diff(_id: string, olds: IpPolicyRuleSetOutputs, news: IpPolicyRuleSetInputs) {
  const { replaces } = changedFields(FIELDS, olds, news);
  if (replaces.length) return { changes: true, replaces, deleteBeforeReplace: false };
  const rules = news.rules;
  if (!Array.isArray(rules) || isUnknown(rules) || rules.some((r) => isUnknown(r) || isUnknown(r?.cidr) || isUnknown(r?.action) || isUnknown(r?.description) || isUnknown(r?.metadata))) {
    process.stderr.write("rules not known yet (they depend on other resources): the plan is made at update\n");
    return { changes: true, replaces: [] };
  }
  const p = plan(olds.rules ?? [], rules, () => true);
  const words = describePlan(p);
  // Shown by Pulumi as a diagnostic of this resource in preview and up: every change before it happens.
  if (words) process.stderr.write(`plan for ${olds.ipPolicyId}: ${words}\n`);
  return { changes: words !== "", replaces: [] };
}

export async function create(inputs: IpPolicyRuleSetInputs) {
  const what = `create IP policy rule set of ${inputs.ipPolicyId}`;
  claim(KIND, inputs.ipPolicyId, what);
  const current = await policyRules(inputs.ipPolicyId, inputs.profile, what);
  // ACCESSCTL_ADOPT_EXISTING=1 (after a killed first `up`) takes only what that run can have made:
  // rules exactly as declared. Anything else needs the program to say takeOver: true.
  const declared = byDeclaredCidr(inputs.rules);
  const refused = inputs.takeOver === true ? [] : current.filter((r) => !(adoptExistingAllowed() && exactlyAsDeclared(declared, r)));
  if (refused.length) {
    const shown = sorted(refused).map((r) => `${r.cidr} ${r.action} (${r.id})`);
    throw plainError(`${what}: the policy already holds ${refused.length} rule${refused.length === 1 ? "" : "s"}${adoptExistingAllowed() ? " not as declared" : ""}: ${listed(shown)}; nothing was changed. ` +
      "To make them this resource's (the undeclared ones are deleted by the next `up`, after a preview shows them), declare takeOver: true. " +
      (adoptExistingAllowed() ? "ACCESSCTL_ADOPT_EXISTING=1 takes only rules exactly as declared (what an interrupted `pulumi up` of this stack can have made)." :
        "If an interrupted `pulumi up` of this stack made them, run `ACCESSCTL_ADOPT_EXISTING=1 pulumi up` once."));
  }
  // Taken over: undeclared rules are kept and recorded; the next preview shows them as to be deleted.
  const rules = await apply(inputs, current, plan(current, inputs.rules, () => false), inputs.ipPolicyId, what);
  return { id: inputs.ipPolicyId, outs: outputs(inputs, rules, inputs) };
}

export async function read(id: string, props: Partial<IpPolicyRuleSetOutputs> = {}) {
  const ipPolicyId = props.ipPolicyId ?? id;
  const rules = sorted(await policyRules(ipPolicyId, props.profile, `read IP policy rule set of ${ipPolicyId}`, props.rules));
  // Inputs as the live policy would declare them: after a refresh, `preview --diff` shows a rule
  // added, changed or deleted by hand as a change of `rules`.
  const inputs = { ipPolicyId, rules: rules.map(declaredForm), ...keptInputs(props) };
  return { id, props: outputs({ ipPolicyId }, rules, props), inputs };
}

export async function update(id: string, olds: IpPolicyRuleSetOutputs, news: IpPolicyRuleSetInputs) {
  const what = `update IP policy rule set of ${news.ipPolicyId}`;
  claim(KIND, news.ipPolicyId, what);
  // Planned against the policy as it is now (a killed or failed run may have done more than the
  // state says). Deleted: the undeclared rules the state knows (those a preview showed); any other
  // undeclared rule is kept and recorded, so the next preview shows it.
  const current = await policyRules(news.ipPolicyId, news.profile, what, olds.rules);
  const known: Record<string, true> = {};
  for (const r of olds.rules ?? []) known[r.id] = true;
  // A rule an IpPolicyRule of this run manages is not the set's to delete (the SDK refuses both on one
  // known policy id; an Output id is only known here).
  const p = plan(current, news.rules, (r) => known[r.id] === true && !claimed("IP policy rule", r.id));
  // A rule with a declared CIDR that no preview showed (added since the last refresh, by hand or by
  // another stack) is never changed unseen (a deny turned allow opens a door), nor taken in: its
  // destroy would be the set's. ACCESSCTL_ADOPT_EXISTING takes one exactly as declared, as create does.
  const declared = byDeclaredCidr(news.rules);
  const unseen = current
    .filter((r) => !known[r.id] && declared[canonicalCidr(r.cidr)] !== undefined && !(adoptExistingAllowed() && exactlyAsDeclared(declared, r)))
    .map((r) => `${r.cidr} ${r.action} (${r.id})`);
  if (unseen.length) {
    throw plainError(`${what}: ${listed(unseen)} ${unseen.length === 1 ? "is a rule" : "are rules"} that no preview of this set showed (added since the last refresh, by hand or by another stack); nothing was changed. ` +
      "Run `pulumi refresh` (or `up --refresh`): the preview then shows what `up` will do to them.");
  }
  const rules = await apply(news, current, p, id, what);
  return { outs: outputs(news, rules, news) };
}

async function remove(id: string, props: IpPolicyRuleSetOutputs): Promise<void> {
  const ipPolicyId = props.ipPolicyId ?? id;
  const what = `delete IP policy rule set of ${ipPolicyId}`;
  const current = await policyRules(ipPolicyId, props.profile, what, props.rules);
  // The rules the state knows (those a preview or refresh showed); one that came since is left, and named.
  const known: Record<string, true> = {};
  for (const r of props.rules ?? []) known[r.id] = true;
  const p: Plan = { creates: [], patches: [], flips: [], deletes: current.filter((r) => known[r.id]), kept: current.filter((r) => !known[r.id]) };
  await apply({ ipPolicyId, profile: props.profile }, current, p, id, what);
  if (p.kept.length) {
    process.stderr.write(`${what}: left ${p.kept.length} rule(s) that no refresh of this stack has shown: ${listed(p.kept.map((r) => `${r.cidr} ${r.action} (${r.id})`))}\n`);
  }
}
export { remove as delete };

// ---- carrying out a plan ----------------------------------------------------------------------

/**
 * Runs a plan, CONCURRENCY calls at once: creates, patches and flips (each a delete, then a create
 * of the same CIDR) first, so that no moment lacks both the old rule and the new; then the deletes.
 * Tracks every call's result. On a failure it starts nothing more, lets the calls under way finish,
 * and throws an error carrying the set's id and outputs that describe the rules that exist now
 * (a partial create or update: the engine records them, and the next `up` finishes the job).
 */
async function apply(inputs: { ipPolicyId: string; profile?: string; takeOver?: boolean; __provider?: unknown }, current: IpPolicyRuleSetMember[], p: Plan, id: string, what: string): Promise<IpPolicyRuleSetMember[]> {
  const source = profileSource(inputs.profile);
  const live: Record<string, IpPolicyRuleSetMember> = {};
  for (const r of current) live[r.id] = r;
  const failed: ApiFailure[] = [];
  let lostCreate = false;

  const post = async (d: IpPolicyRuleSetRule) => {
    const body = createBody<IpPolicyRuleCreateBody>(RULE_FIELDS, { ...d, ipPolicyId: inputs.ipPolicyId });
    try {
      const made = (await api<IpPolicyRuleBody>("POST", IP_POLICY_RULES_PATH, { what: `create IP policy rule ${d.cidr}`, body, expect: IP_POLICY_RULE_ANSWER, source }).finally(listsChanged)).body;
      live[made.id] = member(made);
    } catch (e) {
      if ((e as ApiFailure).ambiguous) lostCreate = true;
      throw e;
    }
  };
  const patch = async (r: IpPolicyRuleSetMember, d: IpPolicyRuleSetRule) => {
    const moved = canonicalCidr(r.cidr) !== canonicalCidr(d.cidr);
    const body = updateBody<IpPolicyRuleUpdateBody>(RULE_FIELDS, d); // cidr too: the same range is no change
    const done = (await api<IpPolicyRuleBody>("PATCH", rulePath(r.id), { what: `update IP policy rule ${r.id} (${r.cidr}${moved ? ` → ${d.cidr}` : ""})`, body, expect: IP_POLICY_RULE_ANSWER, source }).finally(listsChanged)).body;
    live[r.id] = member(done);
  };
  const del = async (r: IpPolicyRuleSetMember) => {
    await api("DELETE", rulePath(r.id), { what: `delete IP policy rule ${r.id} (${r.cidr})`, allow404: true, source }).finally(listsChanged);
    delete live[r.id];
  };

  const first: (() => Promise<void>)[] = [
    ...p.patches.map((x) => () => patch(x.rule, x.to)),
    ...p.creates.map((d) => () => post(d)),
    ...p.flips.map((x) => async () => {
      await del(x.rule);
      await post(x.to);
    }),
  ];
  const then = p.deletes.map((r) => () => del(r));
  for (const phase of [first, then]) {
    await pool(phase, CONCURRENCY, (e) => failed.push(e as ApiFailure));
    if (failed.length) break;
  }
  if (!failed.length) return Object.values(live);

  let rules = Object.values(live);
  if (lostCreate) {
    // A create whose answer was lost may have made its rule: ask the policy what it holds.
    rules = await policyRules(inputs.ipPolicyId, inputs.profile, what).catch(() => rules);
  }
  const e = failed[0];
  const message = `${what}: ${failed.length} call${failed.length === 1 ? "" : "s"} failed, first: ${e.message}. ` +
    `The policy now holds ${rules.length} rule${rules.length === 1 ? "" : "s"}, recorded in the state; run \`pulumi up\` again to finish`;
  // __provider: the host does not add it to an error's properties, and without it the next
  // refresh or destroy of this resource fails ("code must be a string, not undefined").
  const properties = { ...outputs(inputs, rules, inputs), __provider: inputs.__provider };
  throw plainError(message, { id, properties, reasons: [message], status: e.status });
}

/** Runs tasks, `limit` at once; after the first failure starts no more, and returns when all started ones ended. */
async function pool(tasks: (() => Promise<void>)[], limit: number, onError: (e: unknown) => void): Promise<void> {
  let next = 0;
  let stop = false;
  const worker = async () => {
    while (!stop && next < tasks.length) {
      const task = tasks[next++];
      try {
        await task();
      } catch (e) {
        stop = true;
        onError(e);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
}
