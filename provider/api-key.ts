// ApiKey: check / diff / create / read / update / delete against /api_keys.
// This module is the dynamic provider itself (sdk/api-key.ts hands the module to Pulumi), so that
// an installed package serializes into a one-line require of this file.
import { API_KEY_ANSWER, API_KEYS_PATH, ApiKeyBody, ApiKeyCreateBody, ApiKeyUpdateBody } from "../contract/api-key";
import { ID_PREFIX } from "../contract/common";
import { plainError } from "./errors";
import { api, apiPath } from "./http/api";
import { serverClock, timeResolution } from "./http/clock";
import { ApiFailure } from "./http/failures";
import { sleep } from "./http/outcomes";
import { listAll } from "./http/pages";
import {
  changedFields,
  propertyDiff,
  checkFields,
  createBody,
  Fields,
  liveInputs,
  outputsOf,
  updateBody,
} from "./fields";
import { listsChanged, readObject } from "./list-reads";
import {
  adoptGone,
  callerPrincipal,
  Candidate,
  claim,
  CreateAttempt,
  learnPrincipal,
  Marker,
  marked,
  noteReplacing,
  objectExists,
  readMarker,
  replacing,
  visibleMetadata,
  whyNotMadeBy,
} from "./ownership";
import { checkConnection, keptInputs, PROFILE_FIELD, ProfileInput } from "./profiles";
import { ConfigSource, profileSource } from "./config";
import { CheckFailure, id, limitedText, listOfValues, sameJson, sameText, text } from "./validate";
import { holdSecret } from "./http/redact";
import { processState } from "./state";
import { sayWithheld, withheldTexts } from "./server-text";

export { configure } from "./config";

const KIND = "API key";

/** The inputs of an ApiKey; the SDK's ApiKeyArgs is made from this (its docs too). */
export interface ApiKeyInputs extends ProfileInput {
  /** What uses the key. Optional; at most 255 bytes of UTF-8. Removing it clears it on the service. */
  description?: string;
  /** Arbitrary user data, e.g. JSON. Optional; at most 4096 bytes of UTF-8. */
  metadata?: string;
  /**
   * The User (`usr_…`) or Bot (`bot_…`) that owns the key; defaults to the owner of the API key
   * Pulumi runs with. Only admins may name someone else. Changing it replaces the key (new token).
   */
  ownerId?: string;
  /**
   * Take over the existing key `ak_…` instead of creating one (with the dynamic providers, Pulumi's
   * `import` does not work). Its token stays unknown: the service shows a token only once.
   * @onChange nothing: read by the first `up` only
   */
  adoptId?: string;
  /**
   * Any values: when one changes, the key is replaced (a new key with a new token is created, then
   * the old key deleted). Change it to rotate the key, e.g. `triggers: ["2026-11"]`.
   */
  triggers?: unknown[];
}

export interface ApiKeyOutputs {
  description: string;
  metadata: string;
  ownerId: string;
  uri: string;
  createdAt: string;
  /**
   * The bearer token: known only to the run that created the key (the service shows it once), kept
   * in the state afterwards; unknown for a key adopted or imported.
   * @secret
   */
  token?: string;
  adoptId?: string;
  profile?: string;
  triggers?: unknown[];
}

/**
 * Every input, its way in and back. The API cannot move a key to another owner or account: those
 * replace it (an ownerId left out means "the caller", no change), and so do triggers, which exist
 * to replace it. An empty ownerId or adoptId is unset.
 */
export const FIELDS: Fields<ApiKeyInputs, keyof ApiKeyCreateBody | keyof ApiKeyUpdateBody> = {
  description: {
    wire: "description",
    read: (b: ApiKeyBody) => text(b.description),
    check: limitedText("description"),
    same: sameText,
    onChange: "update",
    unset: "",
  },
  // The provider's marker (ownership.ts) is no metadata of the program's: read back as unset.
  metadata: {
    wire: "metadata",
    read: (b: ApiKeyBody) => visibleMetadata(b.metadata),
    check: limitedText("metadata"),
    same: sameText,
    onChange: "update",
    unset: "",
  },
  ownerId: {
    wire: "owner_id",
    read: (b: ApiKeyBody) => b.owner_id,
    declare: "chosen",
    check: id(ID_PREFIX.user, ID_PREFIX.bot),
    emptyIsUnset: true,
    same: (declared, current) => declared === undefined || declared === current,
    onChange: "replace",
  },
  adoptId: { check: id(ID_PREFIX.apiKey), emptyIsUnset: true },
  triggers: { check: listOfValues, same: sameJson, onChange: "replace" },
  profile: PROFILE_FIELD,
};

const keyPath = (id: string) => API_KEYS_PATH + apiPath`/${id}`;

/** The outputs of a key the service showed: the table's fields, and what is not an input. */
export function toOutputs(answer: ApiKeyBody, token: string | undefined): ApiKeyOutputs {
  const body = withheldTexts(answer).body; // (no server text that carries credential material: server-text.ts)
  const fields = outputsOf<Pick<ApiKeyOutputs, "description" | "metadata" | "ownerId">>(FIELDS, body);
  return { ...fields, uri: body.uri, createdAt: body.created_at, ...(token ? { token } : {}) };
}

export async function check(_olds: ApiKeyInputs, news: ApiKeyInputs) {
  const failures: CheckFailure[] = [];
  checkConnection(news, failures);
  const inputs = checkFields(FIELDS, news, failures);
  return { inputs, failures };
}

export async function diff(id: string, olds: ApiKeyOutputs, news: ApiKeyInputs) {
  const { replaces, updates } = changedFields(FIELDS, olds, news);
  if (replaces.length > 0) noteReplacing(KIND, id); // the replacement is a new key, whatever adoptId says
  return {
    changes: replaces.length + updates.length > 0,
    replaces,
    deleteBeforeReplace: false,
    detailedDiff: propertyDiff({ replaces, updates }),
  };
}

export async function create(inputs: ApiKeyInputs & { __urn?: string }) {
  if (inputs.adoptId && !replacing(KIND, inputs.adoptId)) return adopt(inputs.adoptId, inputs);
  const started = Date.now();
  const { body, marker } = marked(createBody<ApiKeyCreateBody>(FIELDS, inputs), inputs.__urn);
  const track = keyCreates();
  track.inFlight++;
  let created: ApiKeyBody;
  try {
    created = (
      await api<ApiKeyBody>("POST", API_KEYS_PATH, {
        what: "create API key",
        body,
        expect: { ...API_KEY_ANSWER, token: "string" },
        source: profileSource(inputs.profile),
      }).finally(listsChanged)
    ).body;
  } catch (e) {
    track.inFlight--;
    // From when the attempt that may have acted was sent (not the first attempt, nor a wait before it).
    if (!(e as ApiFailure).ambiguous) throw e;
    throw marker
      ? await deleteOwnLostKey(e as ApiFailure, inputs, marker)
      : await afterLostAnswer(e as ApiFailure, inputs, (e as ApiFailure).sentAt ?? started);
  }
  track.inFlight--;
  // A token this process holds: no message shows 12 characters of it (those of its id, which it may begin with, aside).
  holdSecret(created.token, created.id);
  track.delivered.push(created.id);
  if (!inputs.ownerId) learnPrincipal(profileSource(inputs.profile), created.owner_id); // who "the caller" is
  return { id: created.id, outs: { ...toOutputs(created, created.token ?? undefined), ...keptInputs(inputs) } };
}

/** Key creates of this provider process: how many are in flight, and the ids handed to Pulumi. */
function keyCreates(): { inFlight: number; delivered: string[] } {
  return processState<{ inFlight: number; delivered: string[] }>("key-creates", () => ({ inFlight: 0, delivered: [] }));
}

/** Takes over an existing key: its token stays unknown to Pulumi (it was shown once, to its creator). */
async function adopt(id: string, inputs: ApiKeyInputs) {
  const found = (
    await api<ApiKeyBody>("GET", keyPath(id), {
      what: `adopt API key ${id}`,
      expect: API_KEY_ANSWER,
      source: profileSource(inputs.profile),
    }).catch(adoptGone(id, "API key"))
  ).body;
  if (inputs.ownerId && found.owner_id !== inputs.ownerId) {
    throw plainError(
      `adopt API key ${id}: it is owned by ${found.owner_id}, not ${inputs.ownerId}; the owner of a key cannot be ` +
        `changed`,
    );
  }
  claim(KIND, id, `adopt API key ${id}`);
  try {
    return { id, outs: { ...toOutputs(await patch(id, inputs), undefined), ...keptInputs(inputs) } };
  } catch (e) {
    // The key exists either way: a partial create keeps it in state, as it is now.
    throw objectExists(e as Error, id, { ...toOutputs(found, undefined), ...keptInputs(inputs) }, inputs);
  }
}

/**
 * The create may or may not have happened; its marker (ownership.ts) tells. A key that names this
 * create's attempt is its own, and useless (nobody got its token): it is deleted, and the create
 * fails, to be run again. No key names it: the create made none. Two or more: a copy, none deleted.
 */
async function deleteOwnLostKey(err: ApiFailure, inputs: ApiKeyInputs, marker: Marker): Promise<Error> {
  const source = profileSource(inputs.profile);
  const lost = `${err.message}; the answer to the create was lost, so its token is unknown`;
  try {
    const naming: ApiKeyBody[] = [];
    for await (const key of listAll<ApiKeyBody>(
      API_KEYS_PATH,
      "keys",
      "look for the API key a lost answer made",
      source,
    )) {
      if (readMarker(key.metadata)?.attempt === marker.attempt) naming.push(key);
    }
    const [made] = naming;
    if (!made)
      return plainError(
        `${lost}: no key names this create (its metadata would), so it made none. Run the update again.`,
      );
    // Anyone who can write metadata can copy an attempt onto another key: two that name it prove neither.
    if (naming.length > 1) {
      return plainError(
        `${lost}: ${naming.length} keys name this create (${naming.map((k) => k.id).join(", ")}); ` +
          `its metadata was copied, so nothing proves which one it made and none was deleted. Delete the one that is ` +
          `yours and that nobody uses (its token was never received), then run the update again.`,
      );
    }
    await api("DELETE", keyPath(made.id), {
      what: `delete API key ${made.id}, made by a create whose answer was lost`,
      allow404: true,
      source,
    }).finally(listsChanged);
    return plainError(
      `${lost}: it made ${made.id} (its metadata names this create), useless without its token, and deleted it ` +
        `again. Run the update again.`,
    );
  } catch (cleanup) {
    return plainError(
      `${lost}, and looking for the key it made failed too (${(cleanup as Error).message}): the key whose metadata ` +
        `holds "${marker.attempt}" is that create's; delete it, then run the update again.`,
    );
  }
}

/**
 * A create with the program's own metadata (no marker) may or may not have happened. A key it made would be useless
 * (nobody got its token), but nothing proves which key that is: another stack or user can make an identical key (the
 * same description, metadata and owner) at the same moment, and deleting theirs cuts off whatever uses
 * it. So the keys it may have made (made since it was sent, with every field it sent, not handed to
 * Pulumi by this run) are named, never deleted, and the user decides.
 */
async function afterLostAnswer(err: ApiFailure, inputs: ApiKeyInputs, started: number): Promise<Error> {
  const track = keyCreates();
  const source = profileSource(inputs.profile);
  // Let the other creates of this run settle first: a sibling key with the same description whose
  // token was handed to Pulumi is not one this create may have made.
  for (let waited = 0; track.inFlight > 0 && waited < 120_000; waited += 100) await sleep(100);
  const lost = `${err.message}; the answer to the create was lost, so its token is unknown`;
  try {
    const owner = inputs.ownerId ?? callerPrincipal(source);
    const maybe: string[] = [];
    // The whole list (no order is promised), within the walk's bounds.
    for await (const key of listAll<ApiKeyBody>(
      API_KEYS_PATH,
      "keys",
      "look for an API key left by a lost answer",
      source,
    )) {
      if (track.delivered.includes(key.id)) continue;
      const attempt: CreateAttempt = {
        kind: KIND,
        sentAt: started,
        sent: {
          description: text(inputs.description),
          metadata: text(inputs.metadata),
          ownerId: owner ?? key.owner_id,
        },
      };
      const found: Candidate = { id: key.id, createdAt: key.created_at, fields: outputsOf(FIELDS, key) };
      // Made no earlier than the create can have been sent (on the service's clock, at its earliest;
      // a time shown in whole seconds may be up to a second behind the moment it names).
      const earliest = (serverClock(source).lower ?? -Infinity) - timeResolution(key.created_at) + 1;
      if (!whyNotMadeBy(attempt, found, earliest))
        maybe.push(`${key.id} (owner ${key.owner_id}, created_at ${key.created_at})`);
    }
    if (!maybe.length)
      return plainError(
        `${lost}: no key with what it sent was made since it was sent, so it made none. Run the update again.`,
      );
    return plainError(
      `${lost}. It may have made ${maybe.length === 1 ? "this key" : "one of these keys"}, left as ` +
        `${maybe.length === 1 ? "it is" : "they are"} ` +
        `(another stack's or user's identical key would look the same): ${maybe.slice(0, 10).join(", ")}` +
        `${maybe.length > 10 ? ` and ${maybe.length - 10} more` : ""}. ` +
        "Delete the one that is yours and that nobody uses (its token was never received), then run the update again.",
    );
  } catch (cleanup) {
    return plainError(
      `${lost}, and looking for a key it may have made failed too (${(cleanup as Error).message}): ` +
        `look for a key created after ${new Date(started).toISOString()} (this machine's clock) with this ` +
        `description, and delete it if it is yours and nobody uses it.`,
    );
  }
}

/** PATCHes the key to the inputs: the fields that differ from `current` (the state's), or, with none, both. */
async function patch(
  id: string,
  inputs: ApiKeyInputs & { __urn?: string },
  current?: ApiKeyOutputs,
): Promise<ApiKeyBody> {
  // a metadata cleared gets the marker back
  const { body } = marked(updateBody<ApiKeyUpdateBody>(FIELDS, inputs, current), inputs.__urn, true);
  return (
    await api<ApiKeyBody>("PATCH", keyPath(id), {
      what: `update API key ${id}`,
      body,
      expect: API_KEY_ANSWER,
      source: profileSource(inputs.profile),
    }).finally(listsChanged)
  ).body;
}

export async function read(id: string, props: Partial<ApiKeyOutputs> = {}) {
  holdSecret(props.token, id);
  const list = {
    list: API_KEYS_PATH,
    field: "keys",
    path: keyPath(id),
    what: `read API key ${id}`,
    expect: API_KEY_ANSWER,
    source: profileSource(props.profile),
  };
  const found = await readObject<ApiKeyBody>(id, list);
  if (!found) return {}; // deleted outside Pulumi: refresh drops it
  const urn = (props as { __urn?: string }).__urn;
  sayWithheld(
    urn,
    list.what,
    withheldTexts(found).fields.map((f) => `${f} of ${id}`),
  );
  const outs = toOutputs(found, props.token);
  // Inputs as the live key would declare them, so that `preview --diff` after a refresh marks the
  // drifted properties (see ip-policy-rule.ts).
  const inputs = { ...liveInputs<ApiKeyInputs>(FIELDS, outs), ...keptInputs(props) };
  return { id, props: { ...outs, ...keptInputs(props) }, inputs };
}

export async function update(id: string, olds: ApiKeyOutputs, news: ApiKeyInputs) {
  holdSecret(olds.token, id);
  const updated = await patch(id, news, olds);
  return { outs: { ...toOutputs(updated, olds.token), ...keptInputs(news) } };
}

async function remove(id: string, props: { profile?: string; token?: string }): Promise<void> {
  holdSecret(props.token, id);
  await api("DELETE", keyPath(id), {
    what: `delete API key ${id}`,
    allow404: true,
    source: profileSource(props.profile),
  }).finally(listsChanged);
}
export { remove as delete };

/** An API key as listed by the API (tokens are never listed). */
export interface ApiKeyInfo {
  /** The key id (`ak_…`). */
  id: string;
  /** URI of the key on the API. */
  uri: string;
  /** What uses the key ("" when unset). */
  description: string;
  /** User data ("" when unset). */
  metadata: string;
  /** The owning User (`usr_…`) or Bot (`bot_…`). */
  ownerId: string;
  /** Creation time, RFC 3339. */
  createdAt: string;
}

/**
 * Every API key of the account, all pages: the list helper of
 * every host (`source`: the program's config, else the provider's).
 */
export async function listApiKeys(source?: ConfigSource): Promise<ApiKeyInfo[]> {
  const keys: ApiKeyInfo[] = [];
  for await (const key of listAll<ApiKeyBody>(API_KEYS_PATH, "keys", "list API keys", source)) {
    const { token: _token, ...info } = toOutputs(key, undefined);
    keys.push({ id: key.id, ...info });
  }
  return keys;
}
