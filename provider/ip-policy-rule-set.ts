// IpPolicyRuleSet: every rule of one IP policy as one resource (authoritative). This module is the
// provider itself, whichever host serves it (see provider/api-key.ts). The set's id is its policy's
// id: a policy has one set (two in one stack are refused; see claim below).
//
// Programs write `rules` as a list; check hands them on keyed by canonical CIDR, and the outputs
// hold the policy's rules keyed the same way, so that Pulumi's diff of one rule added, changed or
// deleted shows that rule, not every rule after it in a list (a policy holds a CIDR once: the CIDR
// is the rule's name). Order, IPv6 spelling and unset vs "" make no diff.
//
// A plan is a value: diff computes it from the rules the state records and the declared ones, and
// shows it under the resource (once per operation: not for the diff a refresh makes). update makes
// exactly that plan, after checking each rule it touches against a fresh listing: a rule changed
// since it was recorded is never touched unseen. It runs in phases that close before they open,
// and deletes last (see apply).
import { createHash } from "node:crypto";
import * as ipaddr from "ipaddr.js";
import { ID_PREFIX } from "../contract/common";
import { IP_POLICY_RULE_ANSWER, IP_POLICY_RULES_PATH, IpPolicyRuleBody, IpPolicyRuleCreateBody, IpPolicyRuleUpdateBody, RULE_ACTIONS, RuleAction } from "../contract/ip-policy-rule";
import { api } from "./http/api";
import { serverClock } from "./http/clock";
import { ApiFailure } from "./http/failures";
import { plainError } from "./errors";
import { report } from "./engine";
import { asDeclared, changedFields, checkFields, createBody, DiffKind, Fields, liveInputs, outputsOf, updateBody } from "./fields";
import { canonicalCidr, cidr, FIELDS as RULE_FIELDS, rulePath } from "./ip-policy-rule";
import { limiterState } from "./limiter";
import { listEverything, listsChanged } from "./list-reads";
import { adoptExistingAllowed, claim, claimed, claimPolicy, CreateAttempt, noteSetMembers, resourceLabel, whyNotMadeBy } from "./ownership";
import { checkConnection, keptInputs, PROFILE_FIELD, ProfileInput } from "./profiles";
import { connection, profileSource } from "./config";
import { addRecord, recordEngine, records } from "./run-record";
import { processState } from "./state";
import { boolean, CheckFailure, id, isUnknown, text, UNKNOWN } from "./validate";

export { configure } from "./config";

/** One rule of a set, as a program declares it (an element of the input `rules`). */
export interface IpPolicyRuleSetRule {
  /** An IPv4 or IPv6 range (`10.0.0.0/8`), or one address (`198.51.100.7`, the same as `/32`); each range once per set, in any spelling. */
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
  /**
   * Every rule the policy should hold, in any order; any other rule of the policy is deleted by `up`.
   * A changed description or metadata is one PATCH, an allow CIDR replaced by another reuses the
   * rule (one PATCH; a deny is created anew, the old one deleted last), a changed action deletes the
   * rule and creates it again.
   * @onChange one request per changed rule
   */
  rules: IpPolicyRuleSetRule[];
  /**
   * Creating the set on a policy that already holds rules fails, naming them, unless this is true:
   * then the set takes the policy's rules over as they are and writes nothing; the next `up` (whose
   * preview shows each change) brings them to the declaration, deleting the undeclared ones.
   * @onChange nothing: read by the first `up` only
   */
  takeOver?: boolean;
}

/** The inputs as check hands them on and the state keeps them: each rule (as the rule's table hands it on) under its canonical CIDR. */
export interface CheckedRuleSetInputs extends Omit<IpPolicyRuleSetInputs, "rules"> {
  rules: Record<string, IpPolicyRuleSetRule>;
  /** The resource's URN, where messages about it go (the SDK or the plugin passes it). */
  __urn?: string;
  /** The inputs the program made secret, by name (the SDK or the plugin passes them): their values are never shown. */
  __secrets?: string[];
  __provider?: unknown;
}

/**
 * A rule of the policy as it stands (a value of the output `rules`, under its canonical CIDR). A
 * preview shows the declared rules: id, uri and createdAt are known once the rule exists.
 * @previewForm IpPolicyRuleSetRule
 */
export interface IpPolicyRuleSetMember {
  /** The rule id (`ipr_…`). */
  id: string;
  /** The range, as the service shows it. */
  cidr: string;
  /** `allow` or `deny`. */
  action: RuleAction;
  /** Description ("" when unset). */
  description: string;
  /** User data ("" when unset). */
  metadata: string;
  /** URI of the rule on the API. */
  uri: string;
  /** Creation time, RFC 3339. */
  createdAt: string;
}

export interface IpPolicyRuleSetOutputs {
  ipPolicyId: string;
  /** Every rule of the policy as it stands, keyed by canonical CIDR. */
  rules: Record<string, IpPolicyRuleSetMember>;
  takeOver?: boolean;
  profile?: string;
  __urn?: string;
  __secrets?: string[];
}

const KIND = "IP policy rule set";
const CONCURRENCY = 16; // creates, patches and deletes at once; the account's limiter paces them
const SHOWN = 5; // CIDRs named in an error
const PROGRESS_MS = 2000; // how often a running operation says how far it has got

/** A rule of the set is an IP policy rule: checked, compared, sent and read back by the rule's own table. */
const MEMBER_FIELDS: Fields<IpPolicyRuleSetRule> = { cidr: RULE_FIELDS.cidr, action: RULE_FIELDS.action, description: RULE_FIELDS.description, metadata: RULE_FIELDS.metadata };

// ---- the declared rules: a program's list, or the keyed form check hands on ---------------------

/** A declared rule with null and "" taken as unset, as for every optional field of a rule. */
function withoutEmpty(rule: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(rule).filter(([key, v]) => !(key in MEMBER_FIELDS) || (v !== null && v !== "")));
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * The declared rules with where each stands: a program's list (`rules[3]`), or the keyed form of
 * the state (`rules["10.0.0.0/8"]`, the CIDR from the key), which check accepts too (an import's
 * inputs, check's own output). A string: why the value is neither.
 */
function declaredEntries(value: unknown): { at: string; rule: unknown }[] | string {
  if (Array.isArray(value)) return value.map((rule, i) => ({ at: `rules[${i}]`, rule }));
  if (isObject(value)) return Object.entries(value).map(([key, rule]) => ({ at: `rules[${JSON.stringify(key)}]`, rule: isObject(rule) ? { cidr: key, ...rule } : rule }));
  return "must be a list of rules: [{cidr, action, description?, metadata?}, …]";
}

/** Every declared rule: each problem named by its place in the program's list and its CIDR (`rules[3].action … (rule 10.1.0.0/16)`). */
function checkRules(value: unknown): string | CheckFailure[] | undefined {
  const entries = declaredEntries(value);
  if (typeof entries === "string") return entries;
  const failures: CheckFailure[] = [];
  const seen: Record<string, string> = {};
  for (const { at, rule } of entries) {
    if (isUnknown(rule)) continue;
    if (!isObject(rule)) {
      failures.push({ property: "", reason: `${at} must be an object {cidr, action, description?, metadata?}` });
      continue;
    }
    const named = typeof rule.cidr === "string" && !isUnknown(rule.cidr);
    checkFields(MEMBER_FIELDS, withoutEmpty(rule), failures, { path: at, noun: "a rule", name: named ? { property: "cidr", label: `rule ${rule.cidr}` } : undefined });
    if (named && !cidr(rule.cidr)) {
      const key = canonicalCidr(rule.cidr as string);
      if (key in seen) failures.push({ property: "", reason: `${at}.cidr ${JSON.stringify(rule.cidr)} is declared twice: ${seen[key]} is the same range (${key}); a policy holds a CIDR once` });
      else seen[key] = at;
    }
  }
  return failures.length ? failures : undefined;
}

/**
 * The declared rules as check hands them on: keyed by canonical CIDR, in CIDR order, each as the
 * rule's table hands it on (no empty text). Unknown while any rule or CIDR is (the keys wait for it).
 */
function keyedRules(value: unknown): Record<string, IpPolicyRuleSetRule> | string {
  const entries = declaredEntries(value);
  if (typeof entries === "string" || entries.some(({ rule }) => isUnknown(rule) || !isObject(rule) || isUnknown(rule.cidr))) return UNKNOWN;
  const rules = entries.map(({ rule }) => checkFields(MEMBER_FIELDS, withoutEmpty(rule as Record<string, unknown>), []) as unknown as IpPolicyRuleSetRule);
  const out: Record<string, IpPolicyRuleSetRule> = {};
  for (const rule of rules.sort((a, b) => compareCidrs(a.cidr, b.cidr))) out[rule.cidr] = rule;
  return out;
}

/** The declared rules (keyed, or a list in a state written before they were keyed) as a list. */
function declaredList(rules: unknown): IpPolicyRuleSetRule[] {
  if (Array.isArray(rules)) return rules as IpPolicyRuleSetRule[];
  return Object.entries((rules ?? {}) as Record<string, IpPolicyRuleSetRule>).map(([c, r]) => ({ ...r, cidr: c }));
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

export const FIELDS: Fields<IpPolicyRuleSetInputs> = {
  ipPolicyId: { required: true, check: id(ID_PREFIX.ipPolicy), onChange: "replace" },
  rules: {
    required: ": a list of {cidr, action, description?, metadata?} (an empty list deletes every rule of the policy)",
    check: checkRules,
    canonical: keyedRules,
    same: (declared, current) => describePlan(plan(members(current), declaredList(declared), () => true)) === "",
    onChange: "update",
  },
  takeOver: { check: boolean },
  profile: PROFILE_FIELD,
};

// ---- the rules as they stand ------------------------------------------------------------------


function member(body: IpPolicyRuleBody): IpPolicyRuleSetMember {
  return { id: body.id, ...outputsOf<Required<IpPolicyRuleSetRule>>(MEMBER_FIELDS, body), uri: body.uri, createdAt: body.created_at };
}

/** The rules of the outputs (keyed, or a list in a state written before they were keyed) as a list. */
function members(rules: unknown): IpPolicyRuleSetMember[] {
  return Array.isArray(rules) ? rules : Object.values((rules ?? {}) as Record<string, IpPolicyRuleSetMember>);
}

/** The rules keyed by canonical CIDR, in CIDR order (a second rule on one CIDR, which the service never lists, keeps its id in its key). */
function keyed(rules: IpPolicyRuleSetMember[]): Record<string, IpPolicyRuleSetMember> {
  const out: Record<string, IpPolicyRuleSetMember> = {};
  const sorted = [...rules].sort((a, b) => compareCidrs(canonicalCidr(a.cidr), canonicalCidr(b.cidr)) || (a.id < b.id ? -1 : 1));
  for (const r of sorted) out[canonicalCidr(r.cidr) in out ? `${canonicalCidr(r.cidr)} ${r.id}` : canonicalCidr(r.cidr)] = r;
  return out;
}

/** Each rule as a program would declare it (canonical CIDR, description/metadata left out when empty), under its CIDR. */
function declaredForms(rules: IpPolicyRuleSetMember[]): Record<string, IpPolicyRuleSetRule> {
  const out: Record<string, IpPolicyRuleSetRule> = {};
  for (const [key, r] of Object.entries(keyed(rules))) out[key] = liveInputs<IpPolicyRuleSetRule>(MEMBER_FIELDS, r);
  return out;
}

function outputs(inputs: { ipPolicyId: string }, rules: IpPolicyRuleSetMember[], kept: Record<string, any>): IpPolicyRuleSetOutputs {
  return { ipPolicyId: inputs.ipPolicyId, rules: keyed(rules), ...keptInputs(kept) };
}

/**
 * Every rule of the policy, from the account's rule list: the walk shared by the reads of a refresh,
 * or, for what a write is planned and checked against (`fresh`), a walk of its own.
 */
async function policyRules(ipPolicyId: string, profile: unknown, what: string, known: IpPolicyRuleSetMember[] = [], fresh = false): Promise<IpPolicyRuleSetMember[]> {
  const source = profileSource(profile);
  const all = await listEverything<IpPolicyRuleBody>({ list: IP_POLICY_RULES_PATH, field: "ip_policy_rules", path: IP_POLICY_RULES_PATH, what, expect: IP_POLICY_RULE_ANSWER, source }, fresh);
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
  /** Undeclared rules left as they are. */
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
    // Only allow rules move (one PATCH). A deny moved would open its old range to the allow rules
    // still held until the run ends: the new deny is created first and the old one deleted last.
    const n = action === "allow" ? Math.min(adds.length, rems.length) : 0;
    for (let i = 0; i < n; i++) p.patches.push({ rule: rems[i], to: adds[i] });
    p.creates.push(...adds.slice(n));
    p.deletes.push(...rems.slice(n));
  }
  p.creates.push(...(added[UNKNOWN] ?? [])); // an action not known yet (preview): a create, reusing no rule
  return p;
}

const writesOf = (p: Plan) => p.creates.length + p.patches.length + 2 * p.flips.length + p.deletes.length;
const moved = (x: { rule: IpPolicyRuleSetMember; to: IpPolicyRuleSetRule }) => canonicalCidr(x.rule.cidr) !== canonicalCidr(x.to.cidr);

/** A value in a plan: quoted, and cut short (the whole value is in the state); one not known at preview, or secret, says so. */
const shown = (v: unknown, secret: boolean) => {
  if (isUnknown(v)) return "(known at update)";
  if (secret) return "[secret]";
  const text = JSON.stringify(v ?? "");
  return text.length > 100 ? `${text.slice(0, 96)}…"` : text;
};

const shownAction = (a: string) => (isUnknown(a) ? "(action known at update)" : a);

/** What a rule declares besides its CIDR and action: `description "…", metadata "…"` (`[secret]` when the program made them secret). */
function texts(d: { description?: string; metadata?: string }, secret: boolean): string {
  return (["description", "metadata"] as const).filter((k) => d[k]).map((k) => `, ${k} ${shown(d[k], secret)}`).join("");
}

/** The fields a PATCH changes: `description "a" → "b"`. */
function changes(r: IpPolicyRuleSetMember, d: IpPolicyRuleSetRule, secret: boolean): string {
  return changedFields(MEMBER_FIELDS, r, d).updates.filter((k) => k !== "cidr").map((k) => `${k} ${shown((r as any)[k], secret)} → ${shown((d as any)[k], secret)}`).join(", ");
}

/** Whether the rules' texts are secret (the program made part of `rules` secret, now or when the state was written): plans show `[secret]`. */
const secretRules = (...props: { __secrets?: string[] }[]) => props.some((p) => p.__secrets?.includes("rules") ?? false);

/**
 * The plan in words: a first line that counts (`create 1, update 2, delete 1: 4 requests`), then one
 * line per change, every change: `+` create, `~` update or move, `±` action changed (delete, then
 * create), `-` delete. "" when there is nothing to do.
 */
export function describePlan(p: Plan, secret = false): string {
  const patched = p.patches.filter((x) => !moved(x));
  const movedRules = p.patches.filter(moved);
  const counts = [
    [p.creates.length, "create"],
    [patched.length, "update"],
    [movedRules.length, "move"],
    [p.flips.length, "replace"],
    [p.deletes.length, "delete"],
  ] as const;
  const head = counts.filter(([n]) => n).map(([n, word]) => `${word} ${n}`).join(", ");
  if (!head) return "";
  const lines = [
    ...p.creates.map((d) => `  + ${canonicalCidr(d.cidr)} ${shownAction(d.action)}${texts(d, secret)}`),
    ...patched.map((x) => `  ~ ${canonicalCidr(x.rule.cidr)}: ${changes(x.rule, x.to, secret)}`),
    ...movedRules.map((x) => `  ~ ${canonicalCidr(x.rule.cidr)} → ${canonicalCidr(x.to.cidr)} (${x.rule.id}, ${x.rule.action}: one PATCH of cidr)${changes(x.rule, x.to, secret) ? `, ${changes(x.rule, x.to, secret)}` : ""}`),
    ...p.flips.map((x) => `  ± ${canonicalCidr(x.rule.cidr)}: action ${x.rule.action} → ${shownAction(x.to.action)} (${x.rule.id} deleted, then created again${isUnknown(x.to.action) ? ", unless it turns out the same" : ""})${texts(x.to, secret)}`),
    ...p.deletes.map((r) => `  - ${canonicalCidr(r.cidr)} ${r.action} (${r.id})${texts(r, secret)}`),
  ];
  return [`${head}: ${requests(writesOf(p))}`, ...lines].join("\n");
}

const requests = (n: number) => `${n} request${n === 1 ? "" : "s"}`;

function listed(items: string[]): string {
  return items.slice(0, SHOWN).join(", ") + (items.length > SHOWN ? `, … (${items.length - SHOWN} more)` : "");
}

/** Operations of this process that checked a set (by URN): their diff shows the plan; a refresh's diff, which no check precedes, does not. */
function checkedSets(): { urns: string[] } {
  return processState<{ urns: string[] }>("rule-set-checks", () => ({ urns: [] }));
}

/**
 * What this `pulumi` command has shown of a set (run-record.ts: the preview's engine and the
 * update's write to one record). A plan shown for `urn`: its operations (planOps), by the first
 * engine that showed one (the preview's; the update's own when there was none, e.g. --skip-preview).
 */
function noteShownPlan(urn: string, ops: string[]): void {
  addRecord("set-plan", urn);
  if (ops.length) addRecord("set-plan-ops", `${urn}\t${ops.join(" ")}`);
}

// One word per operation, what a promise is made of: slots joined by "|", each rule touched as the
// plan saw it (CIDR, action, a hash of its texts) and what it becomes. A value not known at preview
// is "*", which holds any value at update. Ids, CIDRs and hashes have no spaces or "|".
const textsOf = (r: { description?: string; metadata?: string }) =>
  isUnknown(r.description) || isUnknown(r.metadata) ? ANY : createHash("sha256").update(JSON.stringify([r.description ?? "", r.metadata ?? ""])).digest("hex").slice(0, 16);
const ruleOf = (r: IpPolicyRuleSetMember) => `${r.id}|${canonicalCidr(r.cidr)}|${r.action}|${textsOf(r)}`;
const actionOf = (d: IpPolicyRuleSetRule) => (isUnknown(d.action) ? ANY : d.action);
const createOp = (d: IpPolicyRuleSetRule) => `create|${canonicalCidr(d.cidr)}|${actionOf(d)}|${textsOf(d)}`;
const deleteOp = (r: IpPolicyRuleSetMember) => `delete|${ruleOf(r)}`;
const flipOp = (x: { rule: IpPolicyRuleSetMember; to: IpPolicyRuleSetRule }) => `flip|${ruleOf(x.rule)}|${actionOf(x.to)}|${textsOf(x.to)}`;
const patchOp = (x: { rule: IpPolicyRuleSetMember; to: IpPolicyRuleSetRule }) => `patch|${ruleOf(x.rule)}|${canonicalCidr(x.to.cidr)}|${textsOf(x.to)}`;
const planOps = (p: Plan) => [...p.creates.map(createOp), ...p.deletes.map(deleteOp), ...p.flips.map(flipOp), ...p.patches.map(patchOp)];
/** What a plan whose declared rules were not known yet may do to the rules it lists: anything, to those only. */
const anyOps = (recorded: IpPolicyRuleSetMember[]) => [`create|${ANY}|${ANY}|${ANY}`, ...recorded.flatMap((r) => [`delete|${ruleOf(r)}`, `flip|${ruleOf(r)}|${ANY}|${ANY}`, `patch|${ruleOf(r)}|${ANY}|${ANY}`])];

/** Whether `promise` holds `op`: the same word, or one with "*" in any of the slots after the rule. */
function holds(promise: Set<string>, op: string): boolean {
  const slots = op.split("|");
  const free = op.startsWith("create|") ? [1, 2, 3] : op.startsWith("delete|") ? [] : [slots.length - 2, slots.length - 1];
  for (let mask = 0; mask < 1 << free.length; mask++) {
    const word = slots.map((v, i) => (free.some((f, b) => f === i && mask & (1 << b)) ? ANY : v)).join("|");
    if (promise.has(word)) return true;
  }
  return false;
}

/** A promise that holds anything: what the preview showed was not known yet. */
const ANY = "*";

/** The operations of the first plan shown for `urn` in this command, or undefined: none was shown. */
function promisedOps(urn: string | undefined): Set<string> | undefined {
  return urn === undefined ? undefined : firstShown(urn, "set-plan", "set-plan-ops");
}

/** The rules a takeover's preview listed for `urn` in this command, or undefined: it listed none. */
function promisedTakeover(urn: string | undefined): Set<string> | undefined {
  return urn === undefined ? undefined : firstShown(urn, "set-takeover", "set-takeover-rules");
}

// The first engine that showed one whose promise no update has used yet (a `pulumi watch` runs
// several updates in one command: each holds to the plan shown before it). Marks it used.
function firstShown(urn: string, marker: string, list: string): Set<string> | undefined {
  const used = new Set(records(`${marker}-used`).filter((r) => r.value.startsWith(`${urn}\t`)).map((r) => r.value.slice(urn.length + 1)));
  const first = records(marker).find((r) => r.value === urn && !used.has(r.engine))?.engine;
  if (first === undefined) return undefined;
  addRecord(`${marker}-used`, `${urn}\t${first}`);
  const mine = records(list).filter((r) => r.engine === first && r.value.startsWith(`${urn}\t`));
  return new Set(mine.flatMap((r) => r.value.slice(urn.length + 1).split(" ")));
}

/**
 * Rules this engine's refresh found added or changed that the refresh of the engine before it in
 * this command (the preview's) did not: they came after the preview, which cannot have shown them.
 */
function foundAfterPreview(urn: string | undefined): Set<string> {
  if (urn === undefined) return new Set();
  const me = recordEngine();
  const preview = records("set-refreshed").filter((r) => r.value === urn && r.engine !== me).pop()?.engine;
  if (preview === undefined) return new Set(); // no preview refreshed: this refresh's words were the only ones
  const found = (engine: string) => records("set-refresh-found").filter((r) => r.engine === engine && r.value.startsWith(`${urn}\t`)).flatMap((r) => r.value.slice(urn.length + 1).split(" "));
  const seen = new Set(found(preview)); // each rule as that refresh found it: one changed again since is not seen
  return new Set(found(me).filter((rule) => !seen.has(rule)).map((rule) => rule.split("|")[0]));
}

// ---- the resource -----------------------------------------------------------------------------

export async function check(olds: Partial<CheckedRuleSetInputs>, news: IpPolicyRuleSetInputs & { __urn?: string }) {
  const failures: CheckFailure[] = [];
  checkConnection(news, failures);
  const inputs = checkFields(FIELDS, news, failures) as unknown as CheckedRuleSetInputs;
  if (inputs.takeOver === false) delete inputs.takeOver; // false is the default: no diff against unset
  if (inputs.__urn && !checkedSets().urns.includes(inputs.__urn)) checkedSets().urns.push(inputs.__urn);
  if (!failures.length && !isUnknown(inputs.ipPolicyId)) {
    const clash = claimPolicy("set", resourceLabel(inputs.__urn, "IpPolicyRuleSet", `IpPolicyRuleSet of ${inputs.ipPolicyId}`), inputs.ipPolicyId);
    if (clash) failures.push({ property: "ipPolicyId", reason: clash });
  }
  // A new set (or one replaced: another policy, another profile) is created now: what will it do?
  if (!failures.length && (olds.ipPolicyId === undefined || changedFields(FIELDS, olds, inputs).replaces.length)) {
    if (!isUnknown(inputs.ipPolicyId) && !isUnknown(inputs.rules) && !isUnknown(inputs.takeOver)) await previewCreate(inputs);
    else if (inputs.__urn) {
      // Nothing can be planned yet: the preview says so, and that is its promise (any create).
      noteShownPlan(inputs.__urn, [`create|${ANY}|${ANY}|${ANY}`]);
      if (inputs.takeOver === true || isUnknown(inputs.takeOver)) {
        const policy = isUnknown(inputs.ipPolicyId) ? "the set's policy" : inputs.ipPolicyId;
        report(inputs.__urn, `plan for ${policy}: not known yet (it depends on other resources); with takeOver, up takes over whatever rules the policy holds then, as they are`);
        addRecord("set-takeover", inputs.__urn);
        addRecord("set-takeover-rules", `${inputs.__urn}\t${ANY}`);
      }
    }
  }
  return { inputs, failures };
}

/**
 * A create's plan, shown under the resource at preview. A takeover lists the policy (once, and
 * only then): it takes every rule over as it is and writes nothing; the next `up` does the rest.
 */
async function previewCreate(inputs: CheckedRuleSetInputs): Promise<void> {
  const declared = declaredList(inputs.rules);
  const head = `plan for ${inputs.ipPolicyId}`;
  if (inputs.__urn) noteShownPlan(inputs.__urn, declared.map(createOp)); // what up may create (a takeover creates nothing)
  if (inputs.takeOver !== true) return report(inputs.__urn, `${head}: create ${declared.length} rule${declared.length === 1 ? "" : "s"}: ${requests(declared.length)}`);
  // Recorded before the listing: a preview that could not list promised to take nothing.
  if (inputs.__urn) addRecord("set-takeover", inputs.__urn);
  let current: IpPolicyRuleSetMember[];
  try {
    current = await policyRules(inputs.ipPolicyId, inputs.profile, `preview the takeover of ${inputs.ipPolicyId}`);
  } catch (e) {
    return report(inputs.__urn, `${head}: takeOver: could not list the policy to say what the takeover will take (${(e as Error).message}); up will take none of its rules`, { warning: true });
  }
  if (inputs.__urn && current.length) addRecord("set-takeover-rules", `${inputs.__urn}\t${current.map((r) => r.id).join(" ")}`);
  if (!current.length) return report(inputs.__urn, `${head}: takeOver: the policy holds no rule; create ${declared.length}: ${requests(declared.length)}`);
  const next = plan(current, declared, () => true);
  const byCidr = byDeclaredCidr(declared);
  const asIs = current.filter((r) => exactlyAsDeclared(byCidr, r)).length;
  const undeclared = current.filter((r) => !byCidr[canonicalCidr(r.cidr)]).length;
  const then = describePlan(next, secretRules(inputs));
  report(inputs.__urn, `${head}: take over the ${current.length} rule${current.length === 1 ? "" : "s"} the policy holds (${asIs} as declared, ${undeclared} not declared), ` +
    `writing nothing now; ${then ? `the next up then: ${then}` : "nothing more to do"}`);
}

export async function diff(_id: string, olds: IpPolicyRuleSetOutputs, news: CheckedRuleSetInputs) {
  const { replaces } = changedFields(FIELDS, olds, news);
  if (replaces.length) return { changes: true, replaces, deleteBeforeReplace: false, detailedDiff: Object.fromEntries(replaces.map((k) => [k, "update-replace" as DiffKind])) };
  const show = !!news.__urn && checkedSets().urns.includes(news.__urn);
  const recorded = members(olds.rules);
  noteSetMembers(recorded.map((r) => r.id)); // the set keeps them, changed or not: see ip-policy-rule.ts remove
  // (A refresh's diff hands in the inputs of the state, which an older version kept as a list.)
  const declared = Array.isArray(news.rules) || isObject(news.rules) ? declaredList(news.rules) : undefined;
  if (!declared || declared.some((r) => !isObject(r))) {
    // Which CIDRs the program declares is not known yet: no plan can say what up does; say what it may do.
    const may = Object.values(keyed(recorded)).map((r) => `  ? ${r.cidr} ${r.action} (${r.id})${texts(r, secretRules(olds, news))}`);
    if (show) {
      report(news.__urn, [`plan for ${olds.ipPolicyId}: the rules are not known yet (they depend on other resources): up makes the policy hold exactly the declared rules, and may change or delete any of the ${recorded.length} it holds now`, ...may].join("\n"));
      noteShownPlan(news.__urn!, anyOps(recorded));
    }
    return { changes: true, replaces: [], detailedDiff: { rules: "update" as DiffKind } };
  }
  // A description, metadata or action not known yet counts as changed, and says so.
  const p = plan(recorded, declared, () => true);
  const words = describePlan(p, secretRules(olds, news));
  if (show) {
    if (words) report(news.__urn, `plan for ${olds.ipPolicyId}: ${words}`);
    noteShownPlan(news.__urn!, planOps(p));
  }
  return { changes: words !== "", replaces: [], detailedDiff: planDiff(p) };
}

/**
 * Takes out of `p` what `promise` (the operations a preview showed) does not hold; a move not shown
 * is done as the delete and the create that were shown, if any. Returns what was left undone.
 */
function keepUnpromised(p: Plan, promise: Set<string> | undefined): string[] {
  if (!promise) return [];
  const left: string[] = [];
  let closingLeft = false;
  const shown = (op: string, what: string) => holds(promise, op) || (left.push(what), false);
  p.creates = p.creates.filter((d) => shown(createOp(d), `create ${d.cidr} ${d.action}`) || ((closingLeft ||= d.action === "deny"), false));
  const deletes = p.deletes;
  p.deletes = [];
  const keepOrDelete = (r: IpPolicyRuleSetMember) => (shown(deleteOp(r), `delete ${named(r)}`) ? p.deletes : p.kept).push(r);
  deletes.forEach(keepOrDelete);
  const flips = p.flips;
  p.flips = flips.filter((x) => shown(flipOp(x), `${x.rule.action} → ${x.to.action} ${named(x.rule)}`) || (p.kept.push(x.rule), (closingLeft ||= x.to.action === "deny"), false));
  const patches = p.patches;
  p.patches = [];
  for (const x of patches) {
    if (holds(promise, patchOp(x))) p.patches.push(x);
    else if (!moved(x)) (left.push(`update ${named(x.rule)}`), p.kept.push(x.rule));
    else {
      keepOrDelete(x.rule);
      if (shown(createOp(x.to), `create ${x.to.cidr} ${x.to.action}`)) p.creates.push(x.to);
    }
  }
  // A deny left undone: nothing that opens goes ahead without it (an allow it would have carved).
  if (closingLeft) {
    const opening = (what: string) => (left.push(`${what} (held back with the deny)`), false);
    p.creates = p.creates.filter((d) => d.action === "deny" || opening(`create ${d.cidr} ${d.action}`));
    p.patches = p.patches.filter((x) => !moved(x) || (p.kept.push(x.rule), opening(`move ${named(x.rule)} → ${x.to.cidr}`)));
    p.flips = p.flips.filter((x) => x.to.action === "deny" || (p.kept.push(x.rule), opening(`${x.rule.action} → ${x.to.action} ${named(x.rule)}`)));
    p.deletes = p.deletes.filter((r) => r.action !== "deny" || (p.kept.push(r), opening(`delete ${named(r)}`)));
  }
  return left;
}

/** The plan as property paths (a plugin's DetailedDiff): each rule under its CIDR. */
function planDiff(p: Plan): Record<string, DiffKind> {
  const at = (c: string) => `rules[${JSON.stringify(canonicalCidr(c))}]`;
  const out: Record<string, DiffKind> = {};
  for (const d of p.creates) out[at(d.cidr)] = "add";
  for (const r of p.deletes) out[at(r.cidr)] = "delete";
  for (const x of p.flips) out[`${at(x.rule.cidr)}.action`] = "update";
  for (const x of p.patches) {
    if (moved(x)) {
      out[at(x.rule.cidr)] = "delete";
      out[at(x.to.cidr)] = "add";
    } else for (const k of changedFields(MEMBER_FIELDS, x.rule, x.to).updates) out[`${at(x.rule.cidr)}.${k}`] = "update";
  }
  return out;
}

export async function create(inputs: CheckedRuleSetInputs) {
  const what = `create IP policy rule set of ${inputs.ipPolicyId}`;
  claim(KIND, inputs.ipPolicyId, what);
  const current = await policyRules(inputs.ipPolicyId, inputs.profile, what, [], true);
  const declared = declaredList(inputs.rules);
  // A takeover records what the policy holds and writes nothing (its preview said so); the next
  // preview shows each change and the next up makes it.
  // Only what its preview listed: a rule added since is no one's to take unseen (its destroy would delete it).
  if (inputs.takeOver === true && current.length) {
    const listedThen = promisedTakeover(inputs.__urn);
    // No listing by a preview (in a run by the engine, which gives a URN): take nothing unseen.
    const taken = listedThen?.has(ANY) || (!listedThen && !inputs.__urn) ? current : current.filter((r) => listedThen?.has(r.id));
    const since = current.filter((r) => !taken.includes(r)).map((r) => `${r.cidr} ${r.action} (${r.id})`);
    if (!taken.length) {
      throw plainError(`${what}: the policy holds ${since.length} rule${since.length === 1 ? "" : "s"} its preview did not show (added since): ${listed(since)}; nothing was changed. ` +
        "Run `pulumi up` again: its preview shows what the takeover takes.");
    }
    if (since.length) report(inputs.__urn, `${what}: left ${since.length} rule${since.length === 1 ? "" : "s"} its preview did not list (added since), not recorded: ${listed(since)}. \`pulumi refresh\` records them; the preview after it shows what \`up\` will do to them.`, { warning: true });
    return { id: inputs.ipPolicyId, outs: outputs(inputs, taken, inputs) };
  }
  // ACCESSCTL_ADOPT_EXISTING=1 (after a killed first `up`) takes only what that run can have made:
  // rules exactly as declared. Anything else needs the program to say takeOver: true.
  const byCidr = byDeclaredCidr(declared);
  const refused = current.filter((r) => !(adoptExistingAllowed() && exactlyAsDeclared(byCidr, r)));
  if (refused.length) {
    const names = Object.values(keyed(refused)).map((r) => `${r.cidr} ${r.action} (${r.id})`);
    throw plainError(`${what}: the policy already holds ${refused.length} rule${refused.length === 1 ? "" : "s"}${adoptExistingAllowed() ? " not as declared" : ""}: ${listed(names)}; nothing was changed. ` +
      "To make them this resource's, declare takeOver: true: the set takes them over as they are, and the next `up`, after a preview that shows each change, brings them to the declaration. " +
      (adoptExistingAllowed() ? "ACCESSCTL_ADOPT_EXISTING=1 takes only rules exactly as declared (what an interrupted `pulumi up` of this stack can have made)." :
        "If an interrupted `pulumi up` of this stack made them, run `ACCESSCTL_ADOPT_EXISTING=1 pulumi up` once."));
  }
  const p = plan(current, declared, () => false);
  const unpromised = keepUnpromised(p, promisedOps(inputs.__urn));
  const rules = await apply(inputs, current, p, inputs.ipPolicyId, what);
  reportUnpromised(inputs.__urn, what, unpromised);
  return { id: inputs.ipPolicyId, outs: outputs(inputs, rules, inputs) };
}

export async function read(id: string, props: Partial<IpPolicyRuleSetOutputs> = {}) {
  const ipPolicyId = props.ipPolicyId ?? id;
  const rules = await policyRules(ipPolicyId, props.profile, `read IP policy rule set of ${ipPolicyId}`, members(props.rules));
  // Inputs as the live policy would declare them: after a refresh, `preview --diff` shows a rule
  // added, changed or deleted by hand as that rule. Read with nothing known of the set (an import),
  // they are what a program writes: a list (Pulumi writes the program from them).
  const declared = declaredForms(rules);
  const inputs = { ipPolicyId, rules: props.rules === undefined ? declaredList(declared) : declared, ...keptInputs(props) };
  if (props.rules !== undefined) sayDrift(props, rules);
  return { id, props: outputs({ ipPolicyId }, rules, props), inputs };
}

/**
 * A refresh names what it found changed (the diff of `rules` is hidden: it would print every rule),
 * and notes the rules it records for the first time: this command's destroy leaves them (its
 * preview cannot name them).
 */
function sayDrift(props: Partial<IpPolicyRuleSetOutputs>, rules: IpPolicyRuleSetMember[]): void {
  const before: Record<string, IpPolicyRuleSetMember> = {};
  for (const r of members(props.rules)) before[r.id] = r;
  const now: Record<string, true> = {};
  for (const r of rules) now[r.id] = true;
  const secret = secretRules(props);
  const added = rules.filter((r) => !before[r.id]);
  const changed = rules.filter((r) => before[r.id] && !unchanged(before[r.id], r)).map((r) => `${named(before[r.id])}: ${driftOf(before[r.id], r, secret)}`);
  const deleted = Object.values(before).filter((r) => !now[r.id]).map(named);
  if (props.__urn) {
    addRecord("set-refreshed", props.__urn);
    const found = [...added, ...rules.filter((r) => before[r.id] && !unchanged(before[r.id], r))];
    if (found.length) addRecord("set-refresh-found", `${props.__urn}\t${found.map(ruleOf).join(" ")}`);
  }
  // A short first line (Pulumi's rows show a message's first line, again at each change of the row),
  // then one line per rule, as a plan has them.
  const counts = [[added.length, "added"], [changed.length, "changed"], [deleted.length, "deleted"]].filter(([n]) => n).map(([n, what]) => `${n} ${what}`);
  const lines = (what: string, items: string[]) => [...items.slice(0, SHOWN).map((item) => `  ${what} ${item}`), ...(items.length > SHOWN ? [`  … ${items.length - SHOWN} more ${what}`] : [])];
  if (counts.length) {
    report(props.__urn, [`refresh of the IpPolicyRuleSet of ${props.ipPolicyId}: rules changed since the state last recorded the policy: ${counts.join(", ")}`,
      ...lines("added", added.map((r) => `${named(r)}${texts(r, secret)}`)), ...lines("changed", changed), ...lines("deleted", deleted)].join("\n"));
  }
}

const named = (r: IpPolicyRuleSetMember) => `${r.cidr} ${r.action} (${r.id})`;

/** What changed in a rule: `cidr a → b, description "x" → "y"`. */
function driftOf(was: IpPolicyRuleSetMember, now: IpPolicyRuleSetMember, secret: boolean): string {
  const moves = canonicalCidr(was.cidr) !== canonicalCidr(now.cidr) ? [`cidr ${was.cidr} → ${now.cidr}`] : [];
  const flips = was.action !== now.action ? [`action ${was.action} → ${now.action}`] : [];
  return [...moves, ...flips, changes(was, now, secret)].filter(Boolean).join(", ");
}

/** Two versions of one rule (by id) that hold the same: nothing was changed by hand between them. */
const unchanged = (a: IpPolicyRuleSetMember, b: IpPolicyRuleSetMember | undefined) =>
  b !== undefined && canonicalCidr(a.cidr) === canonicalCidr(b.cidr) && asDeclared(MEMBER_FIELDS, b, a);

export async function update(id: string, olds: IpPolicyRuleSetOutputs, news: CheckedRuleSetInputs) {
  const what = `update IP policy rule set of ${news.ipPolicyId}`;
  claim(KIND, news.ipPolicyId, what);
  // The plan its preview showed: from the rules the state records (diff made it from the same
  // state). A rule an IpPolicyRule of this run manages is not the set's to delete.
  const recorded = members(olds.rules);
  const declared = declaredList(news.rules);
  const p = plan(recorded, declared, (r) => !claimed("IP policy rule", r.id));
  // Only what this command's preview showed: a rule a later refresh of it found (or changed) is left.
  const unpromised = keepUnpromised(p, promisedOps(news.__urn));
  // Checked against the policy as it is now (a killed or failed run, or a hand, may have changed it).
  const current = await policyRules(news.ipPolicyId, news.profile, what, recorded, true);
  const live: Record<string, IpPolicyRuleSetMember> = {};
  for (const r of current) live[r.id] = r;
  const known: Record<string, IpPolicyRuleSetMember> = {};
  for (const r of recorded) known[r.id] = r;
  const held: Record<string, IpPolicyRuleSetMember> = {};
  for (const r of current) held[canonicalCidr(r.cidr)] = r;
  const secret = secretRules(olds, news);

  // Never touched unseen: a rule the plan changes must be as recorded, and a CIDR it adds must be free
  // (a deny turned allow, or a rule of another stack taken in, opens a door no preview showed).
  // ACCESSCTL_ADOPT_EXISTING takes a rule exactly as declared that holds a CIDR to add, as create does.
  const byCidr = byDeclaredCidr(declared);
  const adopted = (r: IpPolicyRuleSetMember | undefined) => r !== undefined && !known[r.id] && adoptExistingAllowed() && exactlyAsDeclared(byCidr, r);
  const touched = [...p.patches.map((x) => x.rule), ...p.flips.map((x) => x.rule), ...p.deletes.filter((r) => live[r.id])]; // (one gone already needs nothing)
  const stale = touched.filter((r) => !unchanged(r, live[r.id])).map((r) => `${named(r)} (${live[r.id] ? `now ${named(live[r.id])}${texts(live[r.id], secret)}` : "deleted"})`);
  const added = [...p.creates, ...p.patches.filter(moved).map((x) => x.to)];
  const taken = added.map((d) => held[canonicalCidr(d.cidr)]).filter((r): r is IpPolicyRuleSetMember => r !== undefined && !adopted(r));
  const unseen = [...taken.filter((r) => !known[r.id]).map((r) => `${named(r)} (not recorded: added since the last refresh, by hand or by another stack)`), ...taken.filter((r) => known[r.id]).map((r) => `${named(r)} (moved there since it was recorded)`)];
  if (stale.length || unseen.length) {
    throw plainError(`${what}: the policy changed since this stack last recorded it, and the plan its preview showed would touch ${listed([...unseen, ...stale])}; nothing was changed. ` +
      "Run `pulumi refresh` (or `pulumi up --refresh`): the preview then shows what `up` will do to them.");
  }
  // Rules taken over by the switch need nothing more; the rest of the plan is carried out as shown. A
  // rule the plan moved onto a CIDR so taken leaves its old CIDR all the same: it is deleted.
  const adoptedNow = added.map((d) => held[canonicalCidr(d.cidr)]).filter(adopted);
  const moveTaken = (x: Plan["patches"][number]) => moved(x) && !!held[canonicalCidr(x.to.cidr)];
  const todo: Plan = { ...p, creates: p.creates.filter((d) => !held[canonicalCidr(d.cidr)]), patches: p.patches.filter((x) => !moveTaken(x)) };
  todo.deletes = [...p.deletes, ...p.patches.filter(moveTaken).map((x) => x.rule)].filter((r) => live[r.id]); // gone already: nothing to do
  // What changed by hand where the plan does nothing is left as it is. A rule the state knows is
  // recorded as it is now, so that the next preview shows what up does to it; a rule it does not know
  // (another stack's, say) is not recorded: this set's destroy would delete it with no preview naming
  // it. A refresh records it, and the preview after that shows it.
  const planned: Record<string, true> = {};
  for (const r of [...touched, ...p.deletes]) planned[r.id] = true;
  const changedRules = recorded.filter((r) => !planned[r.id] && !unchanged(r, live[r.id]));
  const changed = changedRules.map((r) => (live[r.id] ? `${named(r)}, now ${named(live[r.id])}${texts(live[r.id], secret)}` : `${named(r)}, deleted`));
  const strangers = current.filter((r) => !known[r.id] && !adoptedNow.includes(r));
  // Nothing opens more than the preview showed. A deny delete frees its range to every allow still
  // held: not while an allow the plan did not count on stays (left undone, changed or added by hand).
  // What opens (allow creates and moves, flips to allow, deny deletes) needs every deny the plan
  // keeps: not while one of them is gone, moved or turned allow (a change of its text opens nothing).
  const changedNow = changedRules.filter((r) => live[r.id]).map((r) => live[r.id]);
  const unexpectedAllow = [...p.kept.flatMap((r) => [r, live[r.id]]), ...changedNow, ...strangers].some((r) => r && r.action !== "deny");
  const denyLost = recorded.some((r) => !planned[r.id] && r.action === "deny" && (!live[r.id] || live[r.id].action !== "deny" || canonicalCidr(live[r.id].cidr) !== canonicalCidr(r.cidr)));
  const heldBack: string[] = [];
  const hold = (what: string) => (heldBack.push(what), false);
  if (unexpectedAllow || denyLost) todo.deletes = todo.deletes.filter((r) => r.action !== "deny" || hold(`delete ${named(r)}`));
  if (denyLost) {
    todo.creates = todo.creates.filter((d) => d.action === "deny" || hold(`create ${d.cidr} ${d.action}`));
    todo.patches = todo.patches.filter((x) => !moved(x) || hold(`move ${named(x.rule)} → ${x.to.cidr}`));
    todo.flips = todo.flips.filter((x) => x.to.action === "deny" || hold(`${x.rule.action} → ${x.to.action} ${named(x.rule)}`));
  }
  const rules = await apply(news, current.filter((r) => !strangers.includes(r)), todo, id, what);
  if (heldBack.length) {
    report(news.__urn, `${what}: held back ${heldBack.length} change${heldBack.length === 1 ? "" : "s"} that would open more than the preview showed, as the policy changed since (${[unexpectedAllow ? "an allow rule the plan does not delete is there" : "", denyLost ? "a deny rule the plan keeps is gone, moved or turned allow" : ""].filter(Boolean).join("; ")}): ${listed(heldBack)}. ` +
      "Run `pulumi up --refresh`: its preview shows what it will do.", { warning: true });
  }
  if (adoptedNow.length) report(news.__urn, `${what}: took over ${adoptedNow.length} rule${adoptedNow.length === 1 ? "" : "s"} exactly as declared (ACCESSCTL_ADOPT_EXISTING=1): ${listed(adoptedNow.map(named))}`);
  if (changed.length) {
    report(news.__urn, `${what}: left ${changed.length} rule${changed.length === 1 ? "" : "s"} changed since the last refresh, which the preview of this run did not show: ${listed(changed)}. ` +
      "They are recorded as they are: the next preview shows what `up` will do to them.", { warning: true });
  }
  reportUnpromised(news.__urn, what, unpromised);
  if (strangers.length) {
    report(news.__urn, `${what}: left ${strangers.length} rule${strangers.length === 1 ? "" : "s"} added since the last refresh (by hand or by another stack), not recorded: ${listed(strangers.map(named))}. ` +
      "`pulumi refresh` records them; the preview after it shows what `up` will do to them.", { warning: true });
  }
  return { outs: outputs(news, rules, news) };
}

function reportUnpromised(urn: string | undefined, what: string, unpromised: string[]): void {
  if (!unpromised.length) return;
  report(urn, `${what}: left undone ${unpromised.length} change${unpromised.length === 1 ? "" : "s"} the preview of this run did not show (a refresh after it found the policy changed, or a value of the program changed): ${listed(unpromised)}. ` +
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
  const stale = current.filter((r) => known[r.id] && !unchanged(known[r.id], r)).map((r) => `${named(known[r.id])}, now ${named(r)}`);
  if (stale.length) {
    throw plainError(`${what}: ${stale.length} rule${stale.length === 1 ? "" : "s"} changed since this stack last recorded ${stale.length === 1 ? "it" : "them"}: ${listed(stale)}; nothing was deleted. ` +
      "Run `pulumi refresh` first (or `pulumi destroy --refresh`): it records them as they are.");
  }
  const unshown = foundAfterPreview(props.__urn);
  const ours = (r: IpPolicyRuleSetMember) => !!known[r.id] && !unshown.has(r.id);
  const p: Plan = { creates: [], patches: [], flips: [], deletes: current.filter(ours), kept: current.filter((r) => !ours(r)) };
  const open = p.kept.filter((r) => r.action !== "deny");
  if (open.length) {
    throw plainError(`${what}: the policy holds ${open.length} allow rule${open.length === 1 ? "" : "s"} no preview of this stack showed (added since its last refresh, by hand, another stack or an interrupted up): ${listed(open.map(named))}; nothing was deleted, ` +
      "as deleting the set's other rules would leave them open with nothing managing them. Run `pulumi up --refresh` (or `pulumi destroy --refresh` when destroying the stack): its preview's refresh names them, and the delete then takes them with the set.");
  }
  await apply({ ipPolicyId, profile: props.profile, __urn: props.__urn }, current, p, id, what, true);
  if (p.kept.length) {
    report(props.__urn, `${what}: left ${p.kept.length} deny rule(s) no preview of this stack showed (added since its last refresh): ${listed(p.kept.map(named))}`, { warning: true });
  }
}
export { remove as delete };

// ---- carrying out a plan ----------------------------------------------------------------------

/** How far a running plan has got, shown live under the resource every PROGRESS_MS (and once at the end, if it ran that long). */
function progress(urn: string | undefined, p: Plan, profile: unknown) {
  const totals = { created: p.creates.length + p.flips.length, updated: p.patches.length, deleted: p.deletes.length + p.flips.length };
  const done = { created: 0, updated: 0, deleted: 0 };
  const started = Date.now();
  let last = "";
  const pace = () => {
    try {
      const conn = connection(profileSource(profile));
      const limit = limiterState(conn);
      if (!limit?.waiting) return "";
      return `; waiting for the service's rate limit (${limit.blocked ? "it answered 429 Too Many Requests" : `${conn.maxRequestsPerMinute} requests a minute`})`;
    } catch {
      return ""; // the requests themselves say what is wrong with the connection
    }
  };
  const say = () => {
    const counts = (Object.keys(totals) as (keyof typeof totals)[]).filter((k) => totals[k]).map((k) => `${k} ${done[k]} of ${totals[k]}`).join(", ") + pace();
    if (counts !== last) report(urn, counts, { ephemeral: true });
    last = counts;
  };
  const timer = setInterval(say, PROGRESS_MS);
  timer.unref();
  return {
    count: (what: keyof typeof done) => void done[what]++,
    end: () => {
      clearInterval(timer);
      if (Date.now() - started >= PROGRESS_MS) say();
    },
  };
}

/**
 * Runs a plan, CONCURRENCY calls at once, in phases, each started only when the one before has
 * succeeded, so that a run stopped anywhere (a failure, a kill) leaves the policy no more open than
 * it was or will be (each address allowed at any moment is allowed before or after the run): first
 * the deny rules created (allow rules flipped to deny: the allow deleted, then the deny created),
 * then changes of text, then what opens (allow rules created or moved, deny rules flipped to allow),
 * then the allow rules deleted, and last the deny rules deleted (a failed allow delete leaves the
 * denies). Deny rules never move (see plan). Tracks every call's result. On a failure it starts nothing more, lets the calls under way finish, and throws an error
 * carrying the set's id and outputs that describe the rules that exist now (a partial create or
 * update: the engine records them, and the next `up` finishes the job).
 */
async function apply(inputs: { ipPolicyId: string; profile?: string; takeOver?: boolean; __provider?: unknown; __urn?: string }, current: IpPolicyRuleSetMember[], p: Plan, id: string, what: string, deleting = false): Promise<IpPolicyRuleSetMember[]> {
  const source = profileSource(inputs.profile);
  const live: Record<string, IpPolicyRuleSetMember> = {};
  for (const r of current) live[r.id] = r;
  const failed: ApiFailure[] = [];
  const lostCreates: CreateAttempt[] = [];
  let createsNotFound = 0; // a create answered 404: the policy is not there (or not on this account)
  const shown = progress(inputs.__urn, p, inputs.profile);

  const post = async (d: IpPolicyRuleSetRule) => {
    const body = createBody<IpPolicyRuleCreateBody>(RULE_FIELDS, { ...d, ipPolicyId: inputs.ipPolicyId });
    try {
      const made = (await api<IpPolicyRuleBody>("POST", IP_POLICY_RULES_PATH, { what: `create IP policy rule ${d.cidr}`, body, expect: IP_POLICY_RULE_ANSWER, source }).finally(listsChanged)).body;
      live[made.id] = member(made);
      shown.count("created");
    } catch (e) {
      const err = e as ApiFailure;
      if (err.status === 404) createsNotFound++;
      if (err.ambiguous) lostCreates.push({ kind: "IP policy rule", sentAt: err.sentAt ?? Date.now(), failedAt: Date.now(), sent: madeOf(d) });
      throw e;
    }
  };
  const patch = async (r: IpPolicyRuleSetMember, d: IpPolicyRuleSetRule) => {
    const body = updateBody<IpPolicyRuleUpdateBody>(RULE_FIELDS, d, r); // what the plan changes: text, or the cidr of a move
    const done = (await api<IpPolicyRuleBody>("PATCH", rulePath(r.id), { what: `update IP policy rule ${r.id} (${r.cidr}${moved({ rule: r, to: d }) ? ` → ${d.cidr}` : ""})`, body, expect: IP_POLICY_RULE_ANSWER, source }).finally(listsChanged)).body;
    live[r.id] = member(done);
    shown.count("updated");
  };
  const del = async (r: IpPolicyRuleSetMember) => {
    await api("DELETE", rulePath(r.id), { what: `delete IP policy rule ${r.id} (${r.cidr})`, allow404: true, source }).finally(listsChanged);
    delete live[r.id];
    shown.count("deleted");
  };

  const flip = (x: Plan["flips"][number]) => async () => {
    await del(x.rule);
    await post(x.to);
  };
  const denies = (x: { to: IpPolicyRuleSetRule }) => x.to.action === "deny";
  const phases: (() => Promise<void>)[][] = [
    [...p.creates.filter((d) => d.action === "deny").map((d) => () => post(d)), ...p.flips.filter(denies).map(flip)],
    p.patches.filter((x) => !moved(x)).map((x) => () => patch(x.rule, x.to)),
    [...p.creates.filter((d) => d.action !== "deny").map((d) => () => post(d)), ...p.patches.filter(moved).map((x) => () => patch(x.rule, x.to)), ...p.flips.filter((x) => !denies(x)).map(flip)],
    p.deletes.filter((r) => r.action !== "deny").map((r) => () => del(r)),
    p.deletes.filter((r) => r.action === "deny").map((r) => () => del(r)),
  ];
  try {
    for (const phase of phases) {
      await pool(phase, CONCURRENCY, (e) => failed.push(e as ApiFailure));
      if (failed.length) break;
    }
  } finally {
    shown.end();
  }
  if (!failed.length) return Object.values(live);

  const rules = Object.values(live);
  let lost = "";
  if (lostCreates.length) {
    // A create whose answer was lost may have made its rule: the policy tells, and what it holds that
    // such a create can have made is recorded; anything else there is named and left out of the state.
    const { upper, lower } = serverClock(source);
    try {
      const found = (await policyRules(inputs.ipPolicyId, inputs.profile, what, [], true)).filter((r) => !live[r.id]);
      const made = found.filter((r) => lostCreates.some((a) => a.sent.cidr === canonicalCidr(r.cidr) && !whyNotMadeBy(a, { id: r.id, createdAt: r.createdAt, fields: madeOf(r) }, upper, lower)));
      rules.push(...made);
      const others = found.filter((r) => !made.includes(r));
      if (others.length) lost = `; not recorded, as nothing proves a create of this run made them: ${listed(others.map((r) => `${r.cidr} ${r.action} (${r.id})`))}`;
    } catch (listing) {
      lost = `; the answers to ${lostCreates.length} create${lostCreates.length === 1 ? "" : "s"} were lost (${listed(lostCreates.map((a) => a.sent.cidr!))}) and listing the policy failed too (${(listing as Error).message}): run \`pulumi refresh\` before the next up`;
    }
  }
  const e = failed[0];
  const next = createsNotFound === failed.length
    ? `the account has no IP policy ${inputs.ipPolicyId}: check ipPolicyId${inputs.profile ? ` and profile "${String(inputs.profile)}"` : " (and the account the API key is of)"}, then run \`pulumi up\` again`
    : deleting ? "run the `pulumi destroy` (or the `pulumi up` that removes the set) again to finish" : "run `pulumi up` again to finish";
  const message = `${what}: ${failed.length} call${failed.length === 1 ? "" : "s"} failed, first: ${e.message}. ` + (deleting
    ? `${rules.length} rule${rules.length === 1 ? " is" : "s are"} left${lost}; ${next}`
    : `The state records the ${rules.length} rule${rules.length === 1 ? "" : "s"} of the policy this run knows of${lost}; ${next}`);
  // __provider: the host does not add it to an error's properties, and without it the next
  // refresh or destroy of this resource fails ("code must be a string, not undefined").
  const properties = { ...outputs(inputs, rules, inputs), __provider: inputs.__provider };
  throw plainError(message, { id, properties, reasons: [message], status: e.status });
}

/** A rule's fields as a create sends them and the service shows them (ownership.ts compares these). */
function madeOf(r: { cidr: string; action: string; description?: string; metadata?: string }): Record<string, string> {
  return { cidr: canonicalCidr(r.cidr), action: r.action, description: text(r.description), metadata: text(r.metadata) };
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
