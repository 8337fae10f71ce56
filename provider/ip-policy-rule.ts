// IpPolicyRule: check / diff / create / read / update / delete against /ip_policy_rules.
// This module is the dynamic provider itself (see provider/api-key.ts).
import { ID_PREFIX } from "../contract/common";
import { IP_POLICY_RULES_PATH, IpPolicyRuleBody, IpPolicyRuleCreateBody, IpPolicyRuleUpdateBody, RULE_ACTIONS, RuleAction } from "../contract/ip-policy-rule";
import { plainError } from "./errors";
import { api, apiPath } from "./http/api";
import { serverClock } from "./http/clock";
import { ApiFailure } from "./http/failures";
import { listAll } from "./http/pages";
import { changedFields, checkFields, createBody, Fields, updateBody } from "./fields";
import { listsChanged, readObject } from "./list-reads";
import { adoptExistingAllowed, adoptGone, Candidate, claim, claimed, CreateAttempt, mayHaveCreated, noteLostCreate, noteReplacing, objectExists, replacing, whyNotMadeBy } from "./ownership";
import { checkConnection, keptInputs, PROFILE_FIELD, ProfileInput } from "./profiles";
import { profileSource } from "./config";
import { canonicalCidr, CheckFailure, cidr, id, limitedText, oneOf, sameCidr, sameText, text } from "./validate";

export { configure } from "./config";

const KIND = "IP policy rule";

/** The inputs of an IpPolicyRule; the SDK's IpPolicyRuleArgs is made from this (its docs too). */
export interface IpPolicyRuleInputs extends ProfileInput {
  /** The IP policy (`ipp_…`) the rule belongs to. Changing it replaces the rule. */
  ipPolicyId: string;
  /**
   * An IPv4 or IPv6 range in CIDR notation with a prefix length, written as its network address
   * (`10.0.0.0/8`, not `10.0.0.5/8`). IPv6 is compared in canonical form, so case does not matter.
   */
  cidr: string;
  /** `allow` or `deny`. Changing it replaces the rule. */
  action: RuleAction;
  /** Which source IPs these are. Optional; at most 255 bytes of UTF-8. */
  description?: string;
  /** Machine-readable user data. Optional; at most 4096 bytes of UTF-8. */
  metadata?: string;
  /** Take over the existing rule `ipr_…` instead of creating one; its policy and action must match. */
  adoptId?: string;
}

export interface IpPolicyRuleOutputs {
  /** The IP policy id (`ipp_…`). */
  ipPolicyId: string;
  /** The IP policy as a reference. */
  ipPolicy: { id: string; uri: string };
  /** The range, in the service's canonical form. */
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
  adoptId?: string;
  profile?: string;
}

/**
 * Every input: the API cannot change a rule's action or policy, nor move it to another account
 * (profile), so those replace the rule; CIDRs are compared in canonical form; an unset and an
 * empty description are the same.
 */
export const FIELDS: Fields<IpPolicyRuleInputs, keyof IpPolicyRuleCreateBody | keyof IpPolicyRuleUpdateBody> = {
  ipPolicyId: { wire: "ip_policy_id", required: true, check: id(ID_PREFIX.ipPolicy), onChange: "replace" },
  cidr: { wire: "cidr", required: ", e.g. 203.0.113.0/24 or 2001:db8::/32", check: cidr, canonical: canonicalCidr, same: sameCidr, onChange: "update" },
  action: { wire: "action", required: `: ${RULE_ACTIONS.map((a) => JSON.stringify(a)).join(" or ")}`, check: oneOf(RULE_ACTIONS), onChange: "replace" },
  description: { wire: "description", check: limitedText("description"), same: sameText, onChange: "update", unset: "" },
  metadata: { wire: "metadata", check: limitedText("metadata"), same: sameText, onChange: "update", unset: "" },
  adoptId: { check: id(ID_PREFIX.ipPolicyRule), emptyIsUnset: true },
  profile: PROFILE_FIELD,
};

const rulePath = (id: string) => IP_POLICY_RULES_PATH + apiPath`/${id}`;

const RULE_FIELDS = { id: "string", uri: "string", created_at: "string", cidr: "string", "ip_policy.id": "string", "ip_policy.uri": "string", action: "string" } as const;

export function toOutputs(body: IpPolicyRuleBody): IpPolicyRuleOutputs {
  return {
    ipPolicyId: body.ip_policy.id,
    ipPolicy: { id: body.ip_policy.id, uri: body.ip_policy.uri },
    cidr: body.cidr,
    action: body.action,
    description: text(body.description),
    metadata: text(body.metadata),
    uri: body.uri,
    createdAt: body.created_at,
  };
}

export async function check(_olds: IpPolicyRuleInputs, news: IpPolicyRuleInputs) {
  const failures: CheckFailure[] = [];
  checkConnection(news, failures);
  const inputs = checkFields(FIELDS, news, failures);
  return { inputs, failures };
}

export async function diff(id: string, olds: IpPolicyRuleOutputs, news: IpPolicyRuleInputs) {
  const { replaces, updates } = changedFields(FIELDS, olds, news);
  const cidrChanged = updates.includes("cidr");
  if (replaces.length > 0) noteReplacing(KIND, id); // the replacement is a new rule, whatever adoptId says
  return {
    changes: replaces.length + updates.length > 0,
    replaces,
    // A policy holds a CIDR once: a replacement with the same CIDR in the same policy must delete first.
    deleteBeforeReplace: replaces.length > 0 && !cidrChanged && !replaces.includes("ipPolicyId") && !replaces.includes("profile"),
  };
}

/** What a rule holds, in the form the service shows it: what a create sent, or what a found rule has. */
function ruleFields(rule: { ipPolicyId: string; cidr: string; action: string; description?: string; metadata?: string }): Record<string, string> {
  return { ipPolicyId: rule.ipPolicyId, cidr: canonicalCidr(rule.cidr), action: rule.action, description: text(rule.description), metadata: text(rule.metadata) };
}

function candidate(rule: IpPolicyRuleBody): Candidate {
  return { id: rule.id, createdAt: rule.created_at, fields: ruleFields(toOutputs(rule)) };
}

export async function create(inputs: IpPolicyRuleInputs) {
  if (inputs.adoptId && !replacing(KIND, inputs.adoptId)) return adopt(inputs.adoptId, inputs);
  const what = `create IP policy rule ${inputs.cidr}`;
  const body = createBody<IpPolicyRuleCreateBody>(FIELDS, inputs);
  const slot = `${inputs.ipPolicyId} ${canonicalCidr(inputs.cidr)}`; // a policy holds a CIDR once
  const attempt: CreateAttempt = { kind: KIND, sentAt: Date.now(), sent: ruleFields(inputs) };
  try {
    const source = profileSource(inputs.profile);
    const created = (await api<IpPolicyRuleBody>("POST", IP_POLICY_RULES_PATH, { what, body, expect: RULE_FIELDS, source }).finally(listsChanged)).body;
    claim(KIND, created.id, what);
    return { id: created.id, outs: { ...toOutputs(created), ...keptInputs(inputs) } };
  } catch (e) {
    const err = e as ApiFailure;
    if (!err.ambiguous && err.status !== 409) throw err;
    attempt.sentAt = err.sentAt ?? attempt.sentAt; // the attempt that may have acted, not the first
    if (err.ambiguous) noteLostCreate(slot, attempt);
    // The rule is there already (409), or our create may have made it before its answer was lost.
    const existing = await findExisting(inputs).catch(() => undefined);
    if (!existing) throw err;
    if (existing.action !== inputs.action) {
      throw plainError(`${err.message}; rule ${existing.id} has this CIDR with action ${existing.action}: delete it, or adopt it with adoptId "${existing.id}" and action "${existing.action}"`);
    }
    // Take it over only if a lost create of this run can have made it (ownership.ts), or the user
    // said so; else it is someone else's. (One that another resource of this run manages fails in
    // claim, with that reason.)
    const upper = serverClock(profileSource(inputs.profile)).upper;
    if (!claimed(KIND, existing.id) && !adoptExistingAllowed() && !mayHaveCreated(KIND, slot, candidate(existing), upper)) {
      const why = whyNotMadeBy(attempt, candidate(existing), upper);
      throw plainError(`${err.message}; rule ${existing.id} already holds this CIDR and was not created by this run${err.ambiguous && why ? ` (${why})` : ""}. ` +
        `To manage it from this resource, declare adoptId: "${existing.id}". If an interrupted \`pulumi up\` of this stack made it, ` +
        "run `ACCESSCTL_ADOPT_EXISTING=1 pulumi up` once. If another stack manages it, remove it from this one.");
    }
    claim(KIND, existing.id, what);
    return converge(existing, inputs);
  }
}

async function findExisting(inputs: IpPolicyRuleInputs): Promise<IpPolicyRuleBody | undefined> {
  for await (const rule of listAll<IpPolicyRuleBody>(IP_POLICY_RULES_PATH, "ip_policy_rules", "look for an existing rule", profileSource(inputs.profile))) {
    if (rule.ip_policy?.id === inputs.ipPolicyId && sameCidr(rule.cidr, inputs.cidr)) return rule;
  }
  return undefined;
}

/** Takes over an existing rule and brings it to the declared inputs. */
async function adopt(id: string, inputs: IpPolicyRuleInputs) {
  const what = `adopt IP policy rule ${id}`;
  const found = (await api<IpPolicyRuleBody>("GET", rulePath(id), { what, expect: RULE_FIELDS, source: profileSource(inputs.profile) }).catch(adoptGone(id, "rule"))).body;
  for (const [property, have, want] of [["ipPolicyId", found.ip_policy.id, inputs.ipPolicyId], ["action", found.action, inputs.action]]) {
    if (have !== want) {
      throw plainError(`${what}: its ${property} is ${have}, not ${want}, and the API cannot change it; declare ${property}: "${have}" or let Pulumi create a new rule`);
    }
  }
  claim(KIND, id, what);
  return converge(found, inputs);
}

async function converge(found: IpPolicyRuleBody, inputs: IpPolicyRuleInputs) {
  const current = toOutputs(found);
  const settled = sameCidr(found.cidr, inputs.cidr) && text(inputs.description) === current.description && text(inputs.metadata) === current.metadata;
  try {
    const outs = settled ? current : toOutputs(await patch(found.id, inputs));
    return { id: found.id, outs: { ...outs, ...keptInputs(inputs) } };
  } catch (e) {
    // The rule exists either way: a partial create keeps it in state, as it is now.
    throw objectExists(e as Error, found.id, { ...current, ...keptInputs(inputs) }, inputs);
  }
}

async function patch(id: string, inputs: IpPolicyRuleInputs): Promise<IpPolicyRuleBody> {
  // All three are always sent: a description or metadata removed from the program is cleared.
  const body = updateBody<IpPolicyRuleUpdateBody>(FIELDS, inputs);
  return (await api<IpPolicyRuleBody>("PATCH", rulePath(id), { what: `update IP policy rule ${id}`, body, expect: RULE_FIELDS, source: profileSource(inputs.profile) }).finally(listsChanged)).body;
}

/** Description and metadata as a program declares them: left out when empty. */
function declared(outs: { description: string; metadata: string }) {
  return { ...(outs.description ? { description: outs.description } : {}), ...(outs.metadata ? { metadata: outs.metadata } : {}) };
}

export async function read(id: string, props: Partial<IpPolicyRuleOutputs> = {}) {
  const list = { list: IP_POLICY_RULES_PATH, field: "ip_policy_rules", path: rulePath(id), what: `read IP policy rule ${id}`, expect: RULE_FIELDS, source: profileSource(props.profile) };
  const found = await readObject<IpPolicyRuleBody>(id, list);
  if (!found) return {}; // deleted outside Pulumi: refresh drops it
  const outs = toOutputs(found);
  // Inputs as the live object would declare them: after a refresh, the engine's diff of these
  // against the program's shows which properties drifted (our diff() sends no property list).
  const inputs = { ipPolicyId: outs.ipPolicyId, cidr: outs.cidr, action: outs.action, ...declared(outs), ...keptInputs(props) };
  return { id, props: { ...outs, ...keptInputs(props) }, inputs };
}

export async function update(id: string, _olds: IpPolicyRuleOutputs, news: IpPolicyRuleInputs) {
  const updated = await patch(id, news);
  return { outs: { ...toOutputs(updated), ...keptInputs(news) } };
}

async function remove(id: string, props: IpPolicyRuleOutputs): Promise<void> {
  await api("DELETE", rulePath(id), { what: `delete IP policy rule ${id}`, allow404: true, source: profileSource(props.profile) }).finally(listsChanged);
}
export { remove as delete };
