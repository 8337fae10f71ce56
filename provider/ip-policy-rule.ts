// IpPolicyRule: check / diff / create / read / update / delete against /ip_policy_rules.
// This module is the dynamic provider itself (see provider/api-key.ts).
import { plainError } from "./errors";
import { api, ApiFailure, apiPath, listAll } from "./client";
import { listsChanged, readObject } from "./list-reads";
import { adoptExistingAllowed, claim, claimed, mayHaveCreated, noteLostCreate } from "./ownership";
import { checkConnection, checkProfile, keptInputs, profileSource } from "./profiles";
import { CheckFailure, checkId, checkKnown, checkText, isUnknown, normalize, parseCidr, sameCidr, text } from "./validate";

export { configure } from "./profiles";

const INPUTS = ["ipPolicyId", "cidr", "action", "description", "metadata", "adoptId", "profile"];
const KIND = "IP policy rule";

/** A rule as the API returns it. */
export interface IpPolicyRuleBody {
  id: string;
  uri: string;
  created_at: string;
  description?: string;
  metadata?: string;
  cidr: string;
  ip_policy: { id: string; uri: string };
  action: "allow" | "deny";
}

export interface IpPolicyRuleOutputs {
  ipPolicyId: string;
  ipPolicy: { id: string; uri: string };
  cidr: string;
  action: "allow" | "deny";
  description: string;
  metadata: string;
  uri: string;
  createdAt: string;
  adoptId?: string;
  profile?: string;
}

type Inputs = Record<string, any>;

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

export async function check(_olds: Inputs, news: Inputs) {
  const failures: CheckFailure[] = [];
  const inputs = normalize(news, ["adoptId"]);
  checkConnection(news, failures);
  checkKnown(news, INPUTS, failures);
  checkId(news, "ipPolicyId", ["ipp"], failures, true);
  checkId(news, "adoptId", ["ipr"], failures, false);
  checkText(news, failures);
  checkProfile(news, failures);
  if (!isUnknown(news.action) && news.action !== "allow" && news.action !== "deny") {
    failures.push({ property: "action", reason: news.action === undefined ? "action is required: \"allow\" or \"deny\"" : `action must be "allow" or "deny", got ${JSON.stringify(news.action)}` });
  }
  if (news.cidr === undefined || news.cidr === "") {
    failures.push({ property: "cidr", reason: "cidr is required, e.g. 203.0.113.0/24 or 2001:db8::/32" });
  } else if (!isUnknown(news.cidr)) {
    const parsed = typeof news.cidr === "string" ? parseCidr(news.cidr) : { reason: "cidr must be a string" };
    if ("reason" in parsed) failures.push({ property: "cidr", reason: `cidr ${parsed.reason}` });
    else inputs.cidr = parsed.cidr; // the service's canonical form: no diff between 2001:DB8::/32 and 2001:db8::/32
  }
  return { inputs, failures };
}

export async function diff(_id: string, olds: Inputs, news: Inputs) {
  // The API cannot change a rule's action or policy: those replace the rule.
  // Nor move it to another account (profile).
  const replaces = ["action", "ipPolicyId"].filter((p) => isUnknown(news[p]) || news[p] !== olds[p]);
  if (isUnknown(news.profile) || (news.profile || "") !== (olds.profile || "")) replaces.push("profile");
  const cidrChanged = isUnknown(news.cidr) || !sameCidr(news.cidr, olds.cidr);
  const updates = ["description", "metadata"].filter((p) => isUnknown(news[p]) || text(news[p]) !== text(olds[p]));
  if (cidrChanged) updates.push("cidr");
  return {
    changes: replaces.length + updates.length > 0,
    replaces,
    // A policy holds a CIDR once: a replacement with the same CIDR in the same policy must delete first.
    deleteBeforeReplace: replaces.length > 0 && !cidrChanged && !replaces.includes("ipPolicyId") && !replaces.includes("profile"),
  };
}

export async function create(inputs: Inputs) {
  if (inputs.adoptId) return adopt(inputs.adoptId, inputs);
  const what = `create IP policy rule ${inputs.cidr}`;
  const body = {
    ip_policy_id: inputs.ipPolicyId,
    cidr: inputs.cidr,
    action: inputs.action,
    ...(inputs.description ? { description: inputs.description } : {}),
    ...(inputs.metadata ? { metadata: inputs.metadata } : {}),
  };
  const slot = `${inputs.ipPolicyId} ${inputs.cidr}`; // a policy holds a CIDR once
  try {
    const source = profileSource(inputs.profile);
    const created = (await api<IpPolicyRuleBody>("POST", "/ip_policy_rules", { what, body, expect: RULE_FIELDS, source }).finally(listsChanged)).body;
    claim(KIND, created.id, what);
    return { id: created.id, outs: { ...toOutputs(created), ...keptInputs(inputs) } };
  } catch (e) {
    const err = e as ApiFailure;
    if (!err.ambiguous && err.status !== 409) throw err;
    if (err.ambiguous) noteLostCreate(KIND, slot);
    // The rule is there already (409), or our create may have made it before its answer was lost.
    const existing = await findExisting(inputs).catch(() => undefined);
    if (!existing) throw err;
    if (existing.action !== inputs.action) {
      throw plainError(`${err.message}; rule ${existing.id} has this CIDR with action ${existing.action}: delete it, or adopt it with adoptId "${existing.id}" and action "${existing.action}"`);
    }
    // Take it over only if this run may have made it, or the user said so; else it is someone else's.
    // (One that another resource of this run manages fails in claim, with that reason.)
    if (!err.ambiguous && !mayHaveCreated(KIND, slot) && !adoptExistingAllowed() && !claimed(KIND, existing.id)) {
      throw plainError(`${err.message}; rule ${existing.id} already holds this CIDR and was not created by this run. ` +
        `To manage it from this resource, declare adoptId: "${existing.id}". If an interrupted \`pulumi up\` of this stack made it, ` +
        "run `ACCESSCTL_ADOPT_EXISTING=1 pulumi up` once. If another stack manages it, remove it from this one.");
    }
    claim(KIND, existing.id, what);
    return converge(existing, inputs);
  }
}

async function findExisting(inputs: Inputs): Promise<IpPolicyRuleBody | undefined> {
  for await (const rule of listAll<IpPolicyRuleBody>("/ip_policy_rules", "ip_policy_rules", "look for an existing rule", profileSource(inputs.profile))) {
    if (rule.ip_policy?.id === inputs.ipPolicyId && sameCidr(rule.cidr, inputs.cidr)) return rule;
  }
  return undefined;
}

/** Takes over an existing rule and brings it to the declared inputs. */
async function adopt(id: string, inputs: Inputs) {
  const found = (await api<IpPolicyRuleBody>("GET", apiPath`/ip_policy_rules/${id}`, { what: `adopt IP policy rule ${id}`, expect: RULE_FIELDS, source: profileSource(inputs.profile) })).body;
  for (const [property, have, want] of [["ipPolicyId", found.ip_policy.id, inputs.ipPolicyId], ["action", found.action, inputs.action]]) {
    if (have !== want) {
      throw plainError(`adopt IP policy rule ${id}: its ${property} is ${have}, not ${want}, and the API cannot change it; declare ${property}: "${have}" or let Pulumi create a new rule`);
    }
  }
  claim(KIND, id, `adopt IP policy rule ${id}`);
  return converge(found, inputs);
}

async function converge(found: IpPolicyRuleBody, inputs: Inputs) {
  const current = toOutputs(found);
  const settled = sameCidr(found.cidr, inputs.cidr) && text(inputs.description) === current.description && text(inputs.metadata) === current.metadata;
  try {
    const outs = settled ? current : toOutputs(await patch(found.id, inputs));
    return { id: found.id, outs: { ...outs, ...keptInputs(inputs) } };
  } catch (e) {
    // The rule exists either way: a partial create keeps it in state, as it is now.
    throw Object.assign(e as Error, { id: found.id, properties: { ...current, ...keptInputs(inputs) } });
  }
}

async function patch(id: string, inputs: Inputs): Promise<IpPolicyRuleBody> {
  // All three are always sent: a description or metadata removed from the program is cleared.
  const body = { cidr: inputs.cidr, description: text(inputs.description), metadata: text(inputs.metadata) };
  return (await api<IpPolicyRuleBody>("PATCH", apiPath`/ip_policy_rules/${id}`, { what: `update IP policy rule ${id}`, body, expect: RULE_FIELDS, source: profileSource(inputs.profile) }).finally(listsChanged)).body;
}

/** Description and metadata as a program declares them: left out when empty. */
function declared(outs: { description: string; metadata: string }) {
  return { ...(outs.description ? { description: outs.description } : {}), ...(outs.metadata ? { metadata: outs.metadata } : {}) };
}

export async function read(id: string, props: Inputs) {
  const list = { list: "/ip_policy_rules", field: "ip_policy_rules", path: apiPath`/ip_policy_rules/${id}`, what: `read IP policy rule ${id}`, expect: RULE_FIELDS, source: profileSource(props.profile) };
  const found = await readObject<IpPolicyRuleBody>(id, list);
  if (!found) return {}; // deleted outside Pulumi: refresh drops it
  const outs = toOutputs(found);
  // Inputs as the live object would declare them: after a refresh, the engine's diff of these
  // against the program's shows which properties drifted (our diff() sends no property list).
  const inputs = { ipPolicyId: outs.ipPolicyId, cidr: outs.cidr, action: outs.action, ...declared(outs), ...keptInputs(props) };
  return { id, props: { ...outs, ...keptInputs(props) }, inputs };
}

export async function update(id: string, _olds: Inputs, news: Inputs) {
  const updated = await patch(id, news);
  return { outs: { ...toOutputs(updated), ...keptInputs(news) } };
}

async function remove(id: string, props: Inputs): Promise<void> {
  await api("DELETE", apiPath`/ip_policy_rules/${id}`, { what: `delete IP policy rule ${id}`, allow404: true, source: profileSource(props.profile) }).finally(listsChanged);
}
export { remove as delete };
