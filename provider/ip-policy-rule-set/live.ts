// The rules of a policy as they stand: what the account's rule list says of one policy, each rule
// as the set's output `rules` holds it (keyed by canonical CIDR), and the outputs.
import { IP_POLICY_RULE_ANSWER, IpPolicyRuleBody, RuleAction } from "../../contract/ip-policy-rule";
import { withheldTexts } from "../server-text";
import { profileSource, teamKeySetting } from "../config";
import { liveInputs, outputsOf } from "../fields";
import { api } from "../http/api";
import { canonicalCidr, rulePath } from "../ip-policy-rule";
import { policyRulesOf } from "../list-reads";
import type { Props } from "../module";
import { ConfigSource } from "../config";
import { adoptExistingAllowed, claimed } from "../ownership";
import {
  Marker,
  markerVerdict,
  MarkerVerdict,
  othersMarker,
  readMarker,
  ruleIdentity,
  serviceNow,
  Unverified,
} from "../ownership";
import { keptInputs } from "../profiles";
import { compareCidrs, IpPolicyRuleSetRule, MEMBER_FIELDS } from "./declared";

export type { IpPolicyRuleSetRule } from "./declared"; // the @previewForm of a member

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
  /**
   * The plan check put in the inputs this state was written with (see index.ts pulumiPlan): a refresh hands it back.
   */
  __plan?: unknown;
}

export function member(body: IpPolicyRuleBody): IpPolicyRuleSetMember {
  return {
    id: body.id,
    ...outputsOf<Required<IpPolicyRuleSetRule>>(MEMBER_FIELDS, body),
    uri: body.uri,
    createdAt: body.created_at,
  };
}

/** The rules of the outputs (keyed, or a list in a state written before they were keyed) as a list. */
export function members(rules: unknown): IpPolicyRuleSetMember[] {
  return Array.isArray(rules) ? rules : Object.values((rules ?? {}) as Record<string, IpPolicyRuleSetMember>);
}

/**
 * The rules keyed by canonical CIDR, in CIDR order (a second rule on
 * one CIDR, which the service never lists, keeps its id in its key).
 */
export function keyed(rules: IpPolicyRuleSetMember[]): Record<string, IpPolicyRuleSetMember> {
  const out: Record<string, IpPolicyRuleSetMember> = {};
  const sorted = rules
    .map((r) => ({ r, key: canonicalCidr(r.cidr) }))
    .sort((a, b) => compareCidrs(a.key, b.key) || (a.r.id < b.r.id ? -1 : 1));
  for (const { r, key } of sorted) out[key in out ? `${key} ${r.id}` : key] = r;
  return out;
}

/**
 * Each rule as a program would declare it (canonical CIDR, description/metadata left out when empty), under its CIDR.
 */
export function declaredForms(rules: IpPolicyRuleSetMember[]): Record<string, IpPolicyRuleSetRule> {
  const out: Record<string, IpPolicyRuleSetRule> = {};
  for (const [key, r] of Object.entries(keyed(rules))) out[key] = liveInputs<IpPolicyRuleSetRule>(MEMBER_FIELDS, r);
  return out;
}

export function outputs(
  inputs: { ipPolicyId: string },
  rules: IpPolicyRuleSetMember[],
  kept: Props,
): IpPolicyRuleSetOutputs {
  return {
    ipPolicyId: inputs.ipPolicyId,
    rules: keyed(rules),
    ...keptInputs(kept),
    ...(kept.__plan !== undefined ? { __plan: kept.__plan } : {}),
  };
}

/**
 * A policy's rules as listed now, and the markers their metadata holds (by rule id: who each claims
 * made it, ownership.ts); `verdicts`: what each marker proves with the team key on that very rule
 * (markerVerdict: verified only when bound to the rule's id; pending within the grace after its create).
 */
export interface LivePolicy {
  rules: IpPolicyRuleSetMember[];
  markers: Record<string, Marker>;
  verdicts: Record<string, MarkerVerdict>;
  /** The texts withheld from the rules (server-text.ts): "description of ipr_…". */
  withheld: string[];
}

/**
 * Every rule of the policy, from the account's rule list (list-reads.ts: the walk shared by the
 * reads of a refresh, or, for what a write is planned and checked against (`fresh`), one whose last
 * page came as the operation began; "anyAge": any whole walk of this process since its last write,
 * for a view a later walk checks again). A rule of `known` missing from the list is gone only by its
 * own believed 404 (http/trust.ts believe404): a list read with another account's key is complete, and empty.
 */
export async function policyRules(
  ipPolicyId: string,
  profile: unknown,
  what: string,
  known: IpPolicyRuleSetMember[] = [],
  fresh: boolean | "anyAge" = false,
): Promise<LivePolicy> {
  const source = profileSource(profile);
  const bodies = await policyRulesOf(source, ipPolicyId, { fresh: fresh === true, anyAge: fresh === "anyAge", what });
  const listed: Record<string, true> = {};
  for (const b of bodies) listed[b.id] = true;
  for (const r of known) {
    if (listed[r.id]) continue;
    const res = await api<IpPolicyRuleBody>("GET", rulePath(r.id), {
      what: `${what}: read IP policy rule ${r.id}`,
      allow404: true,
      expect: IP_POLICY_RULE_ANSWER,
      source,
    });
    if (res.status !== 404 && res.body.ip_policy.id === ipPolicyId) bodies.push(res.body);
  }
  return livePolicy(bodies, source);
}

export function livePolicy(bodies: IpPolicyRuleBody[], source?: ConfigSource): LivePolicy {
  const markers: Record<string, Marker> = {};
  const verdicts: Record<string, MarkerVerdict> = {};
  const teamKey = teamKeySetting()?.key; // read once: a listing may hold many thousands of rules
  const now = serviceNow(source);
  for (const b of bodies) {
    const m = readMarker(b.metadata);
    if (!m) continue;
    markers[b.id] = m;
    const on = ruleIdentity(b.ip_policy.id, canonicalCidr(b.cidr), b.action);
    verdicts[b.id] = markerVerdict(teamKey, m, on, { id: b.id, createdAt: b.created_at }, now);
  }
  const withheld: string[] = [];
  const rules = bodies.map((b) => {
    const clean = withheldTexts(b);
    for (const f of clean.fields) withheld.push(`${f} of ${b.id}`);
    return member(clean.body);
  });
  return { rules, markers, verdicts, withheld };
}

/**
 * The marker of a rule another stack's resource made, when it verifies or is pending (left alone
 * either way: a claim that proves nothing is drift).
 */
export function provenOthers(live: LivePolicy, urn: unknown): (ruleId: string) => Marker | undefined {
  const left = (ruleId: string) => !!live.verdicts[ruleId] && live.verdicts[ruleId].kind !== "unverified";
  return (ruleId) => (left(ruleId) ? othersMarker(live.markers[ruleId], urn) : undefined);
}

/** The end of the grace of a rule whose marker is pending (signed without its id yet), else undefined. */
export function pendingUntil(live: LivePolicy, ruleId: string): string | undefined {
  const v = live.verdicts[ruleId];
  return v?.kind === "pending" ? v.until : undefined;
}

type Member = IpPolicyRuleSetMember;

/**
 * A rule and whose its marker says it is; `pending`: the end of its grace (left alone until then);
 * `because`: why a claim proves nothing.
 */
export interface Claimed {
  rule: Member;
  maker: Marker;
  pending?: string;
  because?: Unverified;
}

/**
 * The rules of a policy another stack's resources made (their markers verify: `others`), and the
 * rest; `claims`: those of the rest whose marker names another stack but does not verify (drift,
 * named with what they claim).
 */
export function byStack(live: LivePolicy, urn: unknown): { rest: Member[]; others: Claimed[]; claims: Claimed[] } {
  const proven = provenOthers(live, urn);
  const whose = (rule: Member, verified: boolean): Claimed[] => {
    const maker = othersMarker(live.markers[rule.id], urn);
    if (!maker || !!proven(rule.id) !== verified) return [];
    const v = live.verdicts[rule.id];
    const pending = v?.kind === "pending" ? { pending: v.until } : {};
    return [{ rule, maker, ...pending, ...(v?.kind === "unverified" ? { because: v.because } : {}) }];
  };
  const others = live.rules.flatMap((r) => whose(r, true));
  const rest = live.rules.filter((r) => !others.some((o) => o.rule === r));
  return { rest, others, claims: live.rules.flatMap((r) => whose(r, false)) };
}

/**
 * Whose the policy's rules are, read once for the guard (guard.ts Situation, Ending): the rules
 * (ids) another resource of this run manages (the run record: an IpPolicyRule in a handover), the
 * markers of other stacks' rules that verify, the rules whose marker names another stack at all, and
 * whether the user said ACCESSCTL_ADOPT_EXISTING=1.
 */
export function whoseRules(live: LivePolicy, recorded: Member[], urn: unknown) {
  const ids = [...new Set([...recorded, ...live.rules].map((r) => r.id))];
  const proven = provenOthers(live, urn);
  return {
    claimedElsewhere: new Set(ids.filter((id) => claimed("IP policy rule", id))),
    othersOf: new Map(ids.flatMap((id): [string, Marker][] => (proven(id) ? [[id, proven(id)!]] : []))),
    claimedByOther: new Set(live.rules.filter((r) => othersMarker(live.markers[r.id], urn)).map((r) => r.id)),
    adoptExisting: adoptExistingAllowed(),
  };
}

/** How a rule is named in messages: `10.0.0.0/8 allow (ipr_…)`. */
export const named = (r: IpPolicyRuleSetMember) => `${r.cidr} ${r.action} (${r.id})`;
