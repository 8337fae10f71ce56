// IpPolicyRule: check / diff / create / read / update / delete against /ip_policy_rules.
// This module is the dynamic provider itself (see provider/api-key.ts). A rule's fields, each in
// and back, are its table FIELDS; the CIDR's own reading is at the end of this file.
import { canonicalCidr, cidr, ruleEffect, sameCidr } from "./access";
import { ID_PREFIX } from "../contract/common";
import {
  IP_POLICY_RULE_ANSWER,
  IP_POLICY_RULES_PATH,
  IpPolicyRuleBody,
  IpPolicyRuleCreateBody,
  IpPolicyRuleUpdateBody,
  RULE_ACTIONS,
  RuleAction,
} from "../contract/ip-policy-rule";
import { report } from "./engine";
import { plainError } from "./errors";
import { api, apiPath } from "./http/api";
import { ApiFailure } from "./http/failures";
import { listAll } from "./http/pages";
import {
  asDeclared,
  changedFields,
  checkFields,
  createBody,
  Fields,
  liveInputs,
  outputsOf,
  propertyDiff,
  Reference,
  updateBody,
} from "./fields";
import { lastListed, listsChanged, policyRulesOf, readObject } from "./list-reads";
import { noteRulesListed, rulesListedInCommand } from "./run-record";
import { ruleAccessWords } from "./messages";
import {
  adoptExistingAllowed,
  adoptGone,
  claim,
  claimed,
  claimPolicy,
  heldBySet,
  idBoundMarker,
  makerName,
  Marker,
  marked,
  markerText,
  pendingText,
  noteReplacing,
  objectExists,
  othersMarker,
  ownerOf,
  readMarker,
  ruleMarkerVerdict,
  replacing,
  resourceLabel,
  ruleIdentity,
  visibleMetadata,
} from "./ownership";
import { checkConnection, keptInputs, PROFILE_FIELD, ProfileInput } from "./profiles";
import { ConfigSource, profileSource, teamKeySetting } from "./config";
import { processState } from "./state";
import { sayWithheld, withheldTexts } from "./server-text";
import { refuseRuleDeleteWhenHolding } from "./plan-hold";
import { CheckFailure, id, isUnknown, limitedText, oneOf, sameText, text } from "./validate";

export { configure } from "./config";

const KIND = "IP policy rule";

/** The inputs of an IpPolicyRule; the SDK's IpPolicyRuleArgs is made from this (its docs too). */
export interface IpPolicyRuleInputs extends ProfileInput {
  /** The IP policy (`ipp_…`) the rule belongs to. Changing it replaces the rule. */
  ipPolicyId: string;
  /**
   * An IPv4 or IPv6 range in CIDR notation, written as its network address (`10.0.0.0/8`, not
   * `10.0.0.5/8`), or one address (`198.51.100.7`: the same as `198.51.100.7/32`; an IPv6 address
   * is a /128). Compared in canonical form, so IPv6 case and spelling do not matter.
   */
  cidr: string;
  /**
   * `allow` or `deny`. Changing it replaces the rule.
   * @onChange a new rule, then the old one deleted; the old one first when the CIDR stays (a policy holds a CIDR once)
   */
  action: RuleAction;
  /** Which source IPs these are. Optional; at most 255 bytes of UTF-8. */
  description?: string;
  /** Machine-readable user data. Optional; at most 4096 bytes of UTF-8. */
  metadata?: string;
  /**
   * Take over the existing rule `ipr_…` instead of creating one; its policy and action must match.
   * @onChange nothing: read by the first `up` only
   */
  adoptId?: string;
}

export interface IpPolicyRuleOutputs {
  /** The IP policy id (`ipp_…`). */
  ipPolicyId: string;
  /** The IP policy as a reference. */
  ipPolicy: Reference;
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
 * Every input, its way in and back: the API cannot change a rule's action or policy, nor move it
 * to another account (profile), so those replace the rule; CIDRs are validated, canonicalized and
 * compared by parseCidr (below); an unset and an empty description are the same. A rule of an
 * IpPolicyRuleSet is checked, sent and read back by the same entries.
 */
export const FIELDS: Fields<IpPolicyRuleInputs, keyof IpPolicyRuleCreateBody | keyof IpPolicyRuleUpdateBody> = {
  ipPolicyId: {
    wire: "ip_policy_id",
    read: (b: IpPolicyRuleBody) => b.ip_policy.id,
    required: true,
    check: id(ID_PREFIX.ipPolicy),
    onChange: "replace",
  },
  cidr: {
    wire: "cidr",
    read: (b: IpPolicyRuleBody) => b.cidr,
    required: ", e.g. 203.0.113.0/24 or 2001:db8::/32",
    check: cidr,
    canonical: canonicalCidr,
    same: sameCidr,
    onChange: "update",
  },
  action: {
    wire: "action",
    read: (b: IpPolicyRuleBody) => b.action,
    required: `: ${RULE_ACTIONS.map((a) => JSON.stringify(a)).join(" or ")}`,
    check: oneOf(RULE_ACTIONS),
    onChange: "replace",
  },
  description: {
    wire: "description",
    read: (b: IpPolicyRuleBody) => text(b.description),
    check: limitedText("description"),
    same: sameText,
    onChange: "update",
    unset: "",
  },
  // The provider's marker (ownership.ts) is no metadata of the program's: read back as unset.
  metadata: {
    wire: "metadata",
    read: (b: IpPolicyRuleBody) => visibleMetadata(b.metadata),
    check: limitedText("metadata"),
    same: sameText,
    onChange: "update",
    unset: "",
  },
  adoptId: { check: id(ID_PREFIX.ipPolicyRule), emptyIsUnset: true },
  profile: PROFILE_FIELD,
};

export const rulePath = (id: string) => IP_POLICY_RULES_PATH + apiPath`/${id}`;

/** The outputs of a rule the service showed: the table's fields, and what is not an input. */
export function toOutputs(answer: IpPolicyRuleBody): IpPolicyRuleOutputs {
  const body = withheldTexts(answer).body; // (no server text that carries credential material: server-text.ts)
  const fields = outputsOf<Omit<IpPolicyRuleOutputs, "ipPolicy" | "uri" | "createdAt">>(FIELDS, body);
  return {
    ...fields,
    ipPolicy: { id: body.ip_policy.id, uri: body.ip_policy.uri },
    uri: body.uri,
    createdAt: body.created_at,
  };
}

export async function check(_olds: IpPolicyRuleInputs, news: IpPolicyRuleInputs & { __urn?: string }) {
  const failures: CheckFailure[] = [];
  checkConnection(news, failures);
  const inputs = checkFields(FIELDS, news, failures);
  if (!failures.length && !isUnknown(inputs.ipPolicyId) && !isUnknown(inputs.cidr)) {
    const clash = claimPolicy(
      "rule",
      resourceLabel(news.__urn, "IpPolicyRule", `IpPolicyRule for ${inputs.cidr}`),
      inputs.ipPolicyId,
    );
    if (clash) failures.push({ property: "ipPolicyId", reason: clash });
  }
  if (news.__urn && !checkedRules().urns.includes(news.__urn)) checkedRules().urns.push(news.__urn);
  if (!failures.length && _olds?.ipPolicyId === undefined) reportAccess(news.__urn, {}, inputs); // a new rule
  return { inputs, failures };
}

export async function diff(id: string, olds: IpPolicyRuleOutputs, news: IpPolicyRuleInputs) {
  const { replaces, updates } = changedFields(FIELDS, olds, news);
  const cidrChanged = updates.includes("cidr");
  if (replaces.length > 0) noteReplacing(KIND, id); // the replacement is a new rule, whatever adoptId says
  const moves = [...replaces, ...updates].some((k) => k === "cidr" || k === "action" || k === "ipPolicyId");
  const urn = (news as { __urn?: string }).__urn;
  // A preview's diff (after a check), not a refresh's: what the change does to access.
  if (moves && urn && checkedRules().urns.includes(urn)) reportAccess(urn, olds, news, id);
  return {
    changes: replaces.length + updates.length > 0,
    replaces,
    detailedDiff: propertyDiff({ replaces, updates }),
    // A policy holds a CIDR once: a replacement with the same CIDR in the same policy must delete first.
    deleteBeforeReplace:
      replaces.length > 0 && !cidrChanged && !replaces.includes("ipPolicyId") && !replaces.includes("profile"),
  };
}

export async function create(inputs: IpPolicyRuleInputs & { __urn?: string }) {
  if (inputs.adoptId && !replacing(KIND, inputs.adoptId)) return adopt(inputs.adoptId, inputs);
  const what = `create IP policy rule ${inputs.cidr}`;
  const { body, marker } = marked(
    createBody<IpPolicyRuleCreateBody>(FIELDS, inputs),
    inputs.__urn,
    false,
    signedOnto(inputs),
  );
  try {
    const source = profileSource(inputs.profile);
    const created = (
      await api<IpPolicyRuleBody>("POST", IP_POLICY_RULES_PATH, {
        what,
        body,
        expect: IP_POLICY_RULE_ANSWER,
        source,
      }).finally(listsChanged)
    ).body;
    claim(KIND, created.id, what);
    return { id: created.id, outs: { ...toOutputs(await bound(created, marker, inputs)), ...keptInputs(inputs) } };
  } catch (e) {
    if ((e as { id?: string }).id) throw e; // made, its marker not bound: a partial create (bound)
    const err = e as ApiFailure;
    if (!err.ambiguous && err.status !== 409) throw err;
    // The rule is there already (409), or our create may have made it before its answer was lost.
    const existing = await findExisting(inputs).catch(() => undefined);
    if (!existing) throw err;
    if (existing.action !== inputs.action) {
      throw plainError(
        `${err.message}; rule ${existing.id} has this CIDR with action ${existing.action}: delete it, or adopt it ` +
          `with adoptId "${existing.id}" and action "${existing.action}"`,
      );
    }
    // Take it over only on proof that this resource made it (its marker), or the user's say-so; else
    // it is someone else's. (One that another resource of this run manages fails in claim.)
    const why = notMadeBy(existing, marker, inputs.__urn);
    // ACCESSCTL_ADOPT_EXISTING=1 says "an interrupted run of this
    // stack made it": never of a rule whose marker names another stack.
    const saidSo = adoptExistingAllowed() && !othersMarker(readMarker(existing.metadata), inputs.__urn);
    if (why && !claimed(KIND, existing.id) && !saidSo) {
      throw plainError(
        `${err.message}; rule ${existing.id} already holds this CIDR and ${why}. ` +
          `To manage it from this resource, declare adoptId: "${existing.id}". If an interrupted \`pulumi up\` of ` +
          `this stack made it, ` +
          "run `ACCESSCTL_ADOPT_EXISTING=1 pulumi up` once. If another stack manages it, remove it from this one.",
      );
    }
    claim(KIND, existing.id, what);
    return converge(existing, inputs);
  }
}

/**
 * Why nothing proves that this create made `found` (undefined: proven): its marker must name this
 * create's attempt. One an earlier create of this resource wrote (an interrupted run) is no proof:
 * stack names are not unique (another backend's stack of the same name); the user says so instead.
 */
function notMadeBy(found: IpPolicyRuleBody, sent: Marker | undefined, urn: unknown): string | undefined {
  const m = readMarker(found.metadata);
  const me = ownerOf(urn);
  if (m && sent && m.attempt === sent.attempt) return undefined;
  if (m && me.resource && m.stack === me.stack && m.resource === me.resource)
    return (
      "was made by an earlier create of this resource (its metadata says so: an interrupted run's, or a stack " +
      "of the same name elsewhere's)"
    );
  if (m) return `was made by ${makerName(m)} (its metadata says so)`;
  if (!sent)
    return (
      "nothing proves this resource made it: the program declares its own metadata, where the provider would " +
      "have written its marker"
    );
  return "was not made by this resource (it carries no marker of this provider's: made by hand, or by another tool)";
}

async function findExisting(inputs: IpPolicyRuleInputs): Promise<IpPolicyRuleBody | undefined> {
  const rules = await policyRulesOf(profileSource(inputs.profile), inputs.ipPolicyId, {
    fresh: true,
    what: "look for an existing rule",
  });
  return rules.find((rule) => sameCidr(rule.cidr, inputs.cidr));
}

/** Takes over an existing rule and brings it to the declared inputs. */
async function adopt(id: string, inputs: IpPolicyRuleInputs) {
  const what = `adopt IP policy rule ${id}`;
  const found = (
    await api<IpPolicyRuleBody>("GET", rulePath(id), {
      what,
      expect: IP_POLICY_RULE_ANSWER,
      source: profileSource(inputs.profile),
    }).catch(adoptGone(id, "rule"))
  ).body;
  const live: Record<string, unknown> = { ...toOutputs(found), ...keptInputs(inputs) };
  for (const property of changedFields(FIELDS, live, inputs).replaces) {
    const [have, want] = [live[property], inputs[property as keyof IpPolicyRuleInputs]];
    throw plainError(
      `${what}: its ${property} is ${have}, not ${want}, and the API cannot change it; declare ${property}: "` +
        `${have}" or let Pulumi create a new rule`,
    );
  }
  // A move of its range would open or close it unseen: the preview shows a create, not a move.
  if (!sameCidr(found.cidr, inputs.cidr)) {
    throw plainError(
      `${what}: its cidr is ${found.cidr}, not ${inputs.cidr}; nothing was changed. Declare cidr: "${found.cidr}" to ` +
        `adopt it as it is, then change cidr: the next preview shows the move`,
    );
  }
  claim(KIND, id, what);
  return converge(found, inputs);
}

/**
 * A create's second write: its marker signed again onto the rule's id, now known (ownership.ts
 * markerVerdict). A failure is a partial create: the rule is recorded, and the next up's update binds it.
 */
async function bound(created: IpPolicyRuleBody, marker: Marker | undefined, inputs: IpPolicyRuleInputs) {
  const withId = marker && idBoundMarker(marker, signedOnto(inputs), created.id);
  if (!withId) return created;
  const what = `sign the marker of IP policy rule ${created.id} onto its id`;
  const source = profileSource(inputs.profile);
  const request = { what, body: { metadata: markerText(withId) }, expect: IP_POLICY_RULE_ANSWER, source };
  try {
    return (await api<IpPolicyRuleBody>("PATCH", rulePath(created.id), request).finally(listsChanged)).body;
  } catch (e) {
    throw objectExists(e as Error, created.id, { ...toOutputs(created), ...keptInputs(inputs) }, inputs);
  }
}

/** Whether a rule found (a lost create's, by its attempt) carries this resource's marker not yet bound to its id. */
function unbound(found: IpPolicyRuleBody, inputs: IpPolicyRuleInputs & { __urn?: string }): boolean {
  const m = readMarker(found.metadata);
  const me = ownerOf(inputs.__urn);
  if (!m || inputs.metadata || !teamKeySetting() || m.stack !== me.stack || m.resource !== me.resource) return false;
  const made = { id: found.id, createdAt: found.created_at };
  return ruleMarkerVerdict(m, signedOnto(inputs), made, profileSource(inputs.profile)).kind !== "verified";
}

async function converge(found: IpPolicyRuleBody, inputs: IpPolicyRuleInputs) {
  const current = { ...toOutputs(found), ...keptInputs(inputs) };
  try {
    const as = asDeclared(FIELDS, current, inputs) && !unbound(found, inputs);
    const outs = as ? current : { ...toOutputs(await patch(found.id, inputs)), ...keptInputs(inputs) };
    return { id: found.id, outs };
  } catch (e) {
    // The rule exists either way: a partial create keeps it in state, as it is now.
    throw objectExists(e as Error, found.id, current, inputs);
  }
}

/** What this resource's marker is signed onto (ownership.ts): its policy, CIDR and action. */
const signedOnto = (inputs: IpPolicyRuleInputs) =>
  ruleIdentity(inputs.ipPolicyId, canonicalCidr(inputs.cidr), inputs.action);

/**
 * PATCHes the rule to the inputs: the fields that differ from `current` (the state's), or, with none,
 * all three. A metadata cleared gets the marker back; so does a move (a marker is signed onto the CIDR),
 * and, with a team key, every update: its marker is signed onto the rule's id (one an older version, or
 * a create whose second write failed, left without it becomes proof).
 */
async function patch(
  id: string,
  inputs: IpPolicyRuleInputs & { __urn?: string },
  current?: IpPolicyRuleOutputs,
): Promise<IpPolicyRuleBody> {
  const changes = updateBody<IpPolicyRuleUpdateBody>(FIELDS, inputs, current);
  if ((changes.cidr !== undefined || teamKeySetting()) && !inputs.metadata) changes.metadata = "";
  const { body } = marked(changes, inputs.__urn, true, signedOnto(inputs), id);
  return (
    await api<IpPolicyRuleBody>("PATCH", rulePath(id), {
      what: `update IP policy rule ${id}`,
      body,
      expect: IP_POLICY_RULE_ANSWER,
      source: profileSource(inputs.profile),
    }).finally(listsChanged)
  ).body;
}

export async function read(id: string, props: Partial<IpPolicyRuleOutputs> = {}) {
  const list = {
    list: IP_POLICY_RULES_PATH,
    field: "ip_policy_rules",
    path: rulePath(id),
    what: `read IP policy rule ${id}`,
    expect: IP_POLICY_RULE_ANSWER,
    source: profileSource(props.profile),
    group: props.ipPolicyId,
  };
  const found = await readObject<IpPolicyRuleBody>(id, list);
  if (typeof props.ipPolicyId === "string") shareListing(list.source, props.ipPolicyId);
  if (!found) return {}; // deleted outside Pulumi: refresh drops it
  const urn = (props as { __urn?: string }).__urn;
  sayWithheld(
    urn,
    list.what,
    withheldTexts(found).fields.map((f) => `${f} of ${id}`),
  );
  const outs = toOutputs(found);
  // Inputs as the live object would declare them: after a refresh, the engine's diff of these
  // against the program's shows which properties drifted (our diff() sends no property list).
  const inputs = { ...liveInputs<IpPolicyRuleInputs>(FIELDS, outs), ...keptInputs(props) };
  return { id, props: { ...outs, ...keptInputs(props) }, inputs };
}

export async function update(id: string, olds: IpPolicyRuleOutputs, news: IpPolicyRuleInputs) {
  const updated = await patch(id, news, olds);
  return { outs: { ...toOutputs(updated), ...keptInputs(news) } };
}

async function remove(id: string, props: IpPolicyRuleOutputs & { __urn?: string }): Promise<void> {
  // A set of this run owns the policy now (one that replaced rule resources, a takeover), or holds
  // this rule in its state (an unchanged set, after a run whose deletes did not happen): deleting
  // it would take it from the set behind its back.
  if (claimed("IP policy rule set", props.ipPolicyId) || heldBySet(id)) {
    report(
      props.__urn,
      `delete IP policy rule ${id}: left in place: the IpPolicyRuleSet of ${props.ipPolicyId} in this stack manages ` +
        `the rules of that policy now (the next preview of the set shows what it does with it)`,
      { warning: true },
    );
    return;
  }
  const what = `delete IP policy rule ${id}`;
  refuseRuleDeleteWhenHolding(what);
  const source = profileSource(props.profile);
  const now = await api<IpPolicyRuleBody>("GET", rulePath(id), {
    what,
    allow404: true,
    expect: IP_POLICY_RULE_ANSWER,
    source,
  });
  if (now.status === 404) return; // gone already (a believed 404: http/trust.ts)
  const why = changedSince(props, now.body);
  if (why)
    return report(props.__urn, `${what}: left in place: ${why}; this stack no longer manages it`, { warning: true });
  await api("DELETE", rulePath(id), { what, allow404: true, source }).finally(listsChanged);
}

/**
 * Why a rule is no longer the one this stack recorded (another range, action or policy; another
 * stack's marker that verifies), or undefined.
 */
function changedSince(recorded: IpPolicyRuleOutputs & { __urn?: string }, now: IpPolicyRuleBody): string | undefined {
  const m = readMarker(now.metadata);
  const on = ruleIdentity(now.ip_policy.id, canonicalCidr(now.cidr), now.action);
  const made = { id: now.id, createdAt: now.created_at };
  const verdict = m && ruleMarkerVerdict(m, on, made, profileSource(recorded.profile));
  const other = verdict && verdict.kind !== "unverified" ? othersMarker(m, recorded.__urn) : undefined;
  const pending = verdict?.kind === "pending" ? `; ${pendingText(other!, verdict.until)}` : "";
  if (other) return `it is ${makerName(other)}'s now (its metadata says so${pending})`;
  const moved =
    !sameCidr(now.cidr, recorded.cidr) || now.action !== recorded.action || now.ip_policy.id !== recorded.ipPolicyId;
  return moved
    ? `it changed since this stack recorded it (${recorded.cidr} ${recorded.action}, now ${now.cidr} ${now.action}` +
        `${now.ip_policy.id !== recorded.ipPolicyId ? ` in ${now.ip_policy.id}` : ""})`
    : undefined;
}
export { remove as delete };

/** A rule as listed by the API. */
export interface IpPolicyRuleInfo extends Omit<IpPolicyRuleOutputs, "adoptId" | "profile"> {
  /** The rule id (`ipr_…`). */
  id: string;
}

/** Which rules to list: every rule of the account, or of one policy. */
export interface IpPolicyRuleFilter {
  /** Only the rules of this IP policy (`ipp_…`). */
  ipPolicyId?: string;
}

/**
 * Every rule of the account, or of one policy, all pages: the list helper
 * of every host (`source`: the program's config, else the provider's).
 */
export async function listIpPolicyRules(
  filter: IpPolicyRuleFilter = {},
  source?: ConfigSource,
): Promise<IpPolicyRuleInfo[]> {
  const rules: IpPolicyRuleInfo[] = [];
  for await (const rule of listAll<IpPolicyRuleBody>(
    IP_POLICY_RULES_PATH,
    "ip_policy_rules",
    "list IP policy rules",
    source,
  )) {
    if (!filter.ipPolicyId || rule.ip_policy.id === filter.ipPolicyId) rules.push({ id: rule.id, ...toOutputs(rule) });
  }
  return rules;
}

// ---- what a rule does to its policy's access ----------------------------------------------------

/** URNs of the rules this process checked: a diff after a check is a preview's (no check precedes a refresh's). */
function checkedRules(): { urns: string[] } {
  return processState<{ urns: string[] }>("rule-checks", () => ({ urns: [] }));
}

/**
 * Says under the rule what its create or change opens or closes in each policy it leaves or joins,
 * given the policy's other rules as the last walk of this process listed them (no request: check and
 * diff make none), or, not knowing them, at most (access.ts ruleEffect).
 */
type Olds = Partial<IpPolicyRuleOutputs>;
function reportAccess(urn: string | undefined, olds: Olds, news: IpPolicyRuleInputs, id?: string): void {
  if (!urn || isUnknown(news.cidr) || isUnknown(news.ipPolicyId)) return;
  const source = profileSource(news.profile);
  for (const policy of [...new Set([olds.ipPolicyId, news.ipPolicyId])]) {
    if (typeof policy !== "string") continue;
    const before = olds.ipPolicyId === policy && olds.cidr ? [{ cidr: olds.cidr, action: olds.action! }] : [];
    const after = news.ipPolicyId === policy ? [{ cidr: news.cidr, action: news.action as unknown }] : [];
    const listed = isUnknown(news.profile) ? undefined : (lastListed(source, policy) ?? rulesListedInCommand(policy));
    const others = listed?.filter((r) => r.id !== id).map((r) => ({ cidr: r.cidr, action: r.action }));
    report(urn, ruleAccessWords(policy, ruleEffect(others, before, after), others?.length));
  }
}

/**
 * A refresh runs in an engine of its own (its own provider processes), before the preview's: the
 * policy's rules as its walk listed them go to the command's record, once a policy per process, so
 * that the preview after it judges a rule beside them (run-record.ts rulesListedInCommand).
 */
function shareListing(source: ConfigSource | undefined, policy: string): void {
  const shared = processState<Set<string>>("rule-listings-shared", () => new Set());
  const listed = shared.has(policy) ? undefined : lastListed(source, policy);
  if (!listed) return;
  shared.add(policy);
  noteRulesListed(
    policy,
    listed.map((r) => ({ id: r.id, cidr: r.cidr, action: r.action })),
  );
}

// ---- CIDRs ------------------------------------------------------------------------------------

// A rule's CIDR is read by access.ts, the one CIDR module (parse, canonical form, compare, one cache).
export { canonicalCidr, cidr, parseCidr, sameCidr } from "./access";
export type { ParsedCidr } from "./access";
