// ApiKey: check / diff / create / read / update / delete against /api_keys.
// This module is the dynamic provider itself (sdk/api-key.ts hands the module to Pulumi), so that
// an installed package serializes into a one-line require of this file.
import { plainError } from "./errors";
import { api, ApiFailure, apiPath, listAll } from "./client";
import { listsChanged, readObject } from "./list-reads";
import { claim } from "./ownership";
import { checkConnection, checkProfile, keptInputs, profileSource } from "./profiles";
import { CheckFailure, checkId, checkKnown, checkText, isUnknown, normalize, text } from "./validate";

export { configure } from "./profiles";

const INPUTS = ["description", "metadata", "ownerId", "adoptId", "profile"];

/** An API key as the API returns it. */
export interface ApiKeyBody {
  id: string;
  uri: string;
  description?: string;
  metadata?: string;
  created_at: string;
  token: string | null;
  owner_id: string;
}

export interface ApiKeyOutputs {
  description: string;
  metadata: string;
  ownerId: string;
  uri: string;
  createdAt: string;
  /** Known only to the run that created the key; kept from state afterwards. */
  token?: string;
  adoptId?: string;
  profile?: string;
}

type Inputs = Record<string, any>;

const KEY_FIELDS = { id: "string", uri: "string", created_at: "string", owner_id: "string" } as const;

export function toOutputs(body: ApiKeyBody, token: string | undefined): ApiKeyOutputs {
  return {
    description: text(body.description),
    metadata: text(body.metadata),
    ownerId: body.owner_id,
    uri: body.uri,
    createdAt: body.created_at,
    ...(token ? { token } : {}),
  };
}

const OPTIONAL_IDS = ["ownerId", "adoptId"];

export async function check(_olds: Inputs, news: Inputs) {
  const failures: CheckFailure[] = [];
  checkConnection(news, failures);
  checkKnown(news, INPUTS, failures);
  checkText(news, failures);
  checkId(news, "ownerId", ["usr", "bot"], failures, false);
  checkId(news, "adoptId", ["ak"], failures, false);
  checkProfile(news, failures);
  return { inputs: normalize(news, OPTIONAL_IDS), failures };
}

export async function diff(_id: string, olds: Inputs, rawNews: Inputs) {
  const news = normalize(rawNews, OPTIONAL_IDS);
  // The API cannot move a key to another owner. An ownerId left out means "the caller", no change.
  const replaces = news.ownerId !== undefined && news.ownerId !== olds.ownerId ? ["ownerId"] : [];
  if (isUnknown(news.profile) || (news.profile || "") !== (olds.profile || "")) replaces.push("profile"); // another account
  const updates = ["description", "metadata"].filter((p) => isUnknown(news[p]) || text(news[p]) !== text(olds[p]));
  return { changes: replaces.length + updates.length > 0, replaces, deleteBeforeReplace: false };
}

export async function create(inputs: Inputs) {
  if (inputs.adoptId) return adopt(inputs);
  const started = Date.now();
  const body = {
    ...(inputs.description ? { description: inputs.description } : {}),
    ...(inputs.metadata ? { metadata: inputs.metadata } : {}),
    ...(inputs.ownerId ? { owner_id: inputs.ownerId } : {}),
  };
  const track = keyCreates();
  track.inFlight++;
  let created: ApiKeyBody;
  try {
    created = (await api<ApiKeyBody>("POST", "/api_keys", { what: "create API key", body, expect: { ...KEY_FIELDS, token: "string" }, source: profileSource(inputs.profile) }).finally(listsChanged)).body;
  } catch (e) {
    track.inFlight--;
    throw (e as ApiFailure).ambiguous ? await afterLostAnswer(e as ApiFailure, inputs, started) : e;
  }
  track.inFlight--;
  track.delivered.push(created.id);
  return { id: created.id, outs: { ...toOutputs(created, created.token ?? undefined), ...keptInputs(inputs) } };
}

/** Key creates of this provider process: how many are in flight, and the ids handed to Pulumi. */
function keyCreates(): { inFlight: number; delivered: string[] } {
  const global = globalThis as unknown as Record<symbol, { inFlight: number; delivered: string[] } | undefined>;
  return (global[Symbol.for("@accessctl/pulumi/key-creates")] ??= { inFlight: 0, delivered: [] });
}

/** Takes over an existing key: its token stays unknown to Pulumi (it was shown once, to its creator). */
async function adopt(inputs: Inputs) {
  const id: string = inputs.adoptId;
  const found = (await api<ApiKeyBody>("GET", apiPath`/api_keys/${id}`, { what: `adopt API key ${id}`, expect: KEY_FIELDS, source: profileSource(inputs.profile) })).body;
  if (inputs.ownerId && found.owner_id !== inputs.ownerId) {
    throw plainError(`adopt API key ${id}: it is owned by ${found.owner_id}, not ${inputs.ownerId}; the owner of a key cannot be changed`);
  }
  claim("API key", id, `adopt API key ${id}`);
  try {
    return { id, outs: { ...toOutputs(await patch(id, inputs), undefined), ...keptInputs(inputs) } };
  } catch (e) {
    // The key exists either way: a partial create keeps it in state, as it is now.
    throw Object.assign(e as Error, { id, properties: { ...toOutputs(found, undefined), ...keptInputs(inputs) } });
  }
}

/**
 * The create may or may not have happened. A key made then is useless (nobody got its token), so
 * find keys that match what we sent and were created meanwhile, delete them, and say so.
 */
async function afterLostAnswer(err: ApiFailure, inputs: Inputs, started: number): Promise<Error> {
  const since = started - 60_000; // allows for clock skew between us and the service
  const track = keyCreates();
  // Let the other creates of this run settle first: a sibling key with the same description whose
  // token was handed to Pulumi is not an orphan.
  for (let waited = 0; track.inFlight > 0 && waited < 120_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
  try {
    const orphans: string[] = [];
    for await (const key of listAll<ApiKeyBody>("/api_keys", "keys", "look for an API key left by a lost answer", profileSource(inputs.profile))) {
      if (Date.parse(key.created_at) < since) break; // newest first: the rest are older
      const same = text(key.description) === text(inputs.description) && text(key.metadata) === text(inputs.metadata);
      if (same && (!inputs.ownerId || key.owner_id === inputs.ownerId) && !track.delivered.includes(key.id)) orphans.push(key.id);
    }
    for (const id of orphans) await remove(id, inputs);
    return plainError(`${err.message}; the answer to the create was lost, so its token is unknown: ` +
      (orphans.length ? `deleted ${orphans.length} unconfirmed key(s) (${orphans.join(", ")}).` : "no key was created.") + " Run the update again.");
  } catch (cleanup) {
    return plainError(`${err.message}; the answer to the create was lost and checking for a key it may have made failed too ` +
      `(${(cleanup as Error).message}): look for a key created after ${new Date(since).toISOString()} with this description and delete it.`);
  }
}

async function patch(id: string, inputs: Inputs): Promise<ApiKeyBody> {
  // Both fields are always sent: one removed from the program is cleared on the service.
  const body = { description: text(inputs.description), metadata: text(inputs.metadata) };
  return (await api<ApiKeyBody>("PATCH", apiPath`/api_keys/${id}`, { what: `update API key ${id}`, body, expect: KEY_FIELDS, source: profileSource(inputs.profile) }).finally(listsChanged)).body;
}

export async function read(id: string, props: Inputs) {
  const list = { list: "/api_keys", field: "keys", path: apiPath`/api_keys/${id}`, what: `read API key ${id}`, expect: KEY_FIELDS, source: profileSource(props.profile) };
  const found = await readObject<ApiKeyBody>(id, list);
  if (!found) return {}; // deleted outside Pulumi: refresh drops it
  const outs = toOutputs(found, props.token);
  // Inputs as the live key would declare them, so that `preview --diff` after a refresh marks the
  // drifted properties (see ip-policy-rule.ts). ownerId is left out: it cannot drift.
  const inputs = { ...(outs.description ? { description: outs.description } : {}), ...(outs.metadata ? { metadata: outs.metadata } : {}), ...keptInputs(props) };
  return { id, props: { ...outs, ...keptInputs(props) }, inputs };
}

export async function update(id: string, olds: Inputs, news: Inputs) {
  const updated = await patch(id, news);
  return { outs: { ...toOutputs(updated, olds.token), ...keptInputs(news) } };
}

async function remove(id: string, props: Inputs): Promise<void> {
  await api("DELETE", apiPath`/api_keys/${id}`, { what: `delete API key ${id}`, allow404: true, source: profileSource(props.profile) }).finally(listsChanged);
}
export { remove as delete };
