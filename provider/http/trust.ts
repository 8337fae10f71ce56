// When a 404 means "gone": only when it is the API's answer (the API URL proven to serve the
// contract) to a key of the account that holds the stack's objects (a fallback key proven by a read
// of one of them). What this process has proven lives here.
import { createHash } from "node:crypto";
import { IP_POLICY_RULES_PATH } from "../../contract/ip-policy-rule";
import { API_KEYS_PATH } from "../../contract/api-key";
import { ConfigSource, Connection, settingName, unprovenFallback } from "../config";
import { setMessage } from "../errors";
import { OperationKind, currentOperation } from "../operation";
import { processState } from "../state";
import { describeError, failure, finish } from "./failures";
import { sleep } from "./outcomes";
import { ApiResponse, RequestOptions } from "./transport";

// The request that shows an API URL serves the contract (any key may list the account's rules).
const PROOF_PATH = `${IP_POLICY_RULES_PATH}?limit=1`;

interface TrustState {
  /** API URLs that gave a contract-shaped success in this process (an object, a list envelope). */
  provenBases: string[];
  /** In-flight proving requests, by API URL. */
  proofs: Record<string, Promise<void>>;
  /** Digests of fallback keys shown to be of the account that holds this stack's objects. */
  provenKeys: string[];
  /** Attempts of reads and deletes, and walks, under way: they may prove a fallback key (believe404 waits for them). */
  reads: number;
}

function shared(): TrustState {
  return processState<TrustState>("http-trust", () => ({ provenBases: [], proofs: {}, provenKeys: [], reads: 0 }));
}

/** The GET that proves an API URL: api() itself, handed in (this file sits below api.ts). */
export type Get = (method: string, path: string, options: RequestOptions) => Promise<ApiResponse>;

/**
 * A short digest of a connection's API key, to remember facts about it without keeping it. Of the
 * key as one profile uses it at one URL: a key proven by an object of one profile proves nothing of
 * another profile's objects (a profile set by mistake to the key of another profile's account).
 */
export function keyDigest(conn: Pick<Connection, "apiKey" | "apiUrl" | "profile">): string {
  return createHash("sha256")
    .update(`${conn.profile ?? ""}\n${conn.apiUrl}\n${conn.apiKey}`)
    .digest("hex")
    .slice(0, 16);
}

/** A fallback key read an object this stack holds: it is of that account, and its 404s can be believed. */
export function proveKey(digest: string | undefined): void {
  const { provenKeys } = shared();
  if (digest && !provenKeys.includes(digest)) provenKeys.push(digest);
}

/** The API URL gave a contract-shaped success: a 404 from it is the API's, not a wrong path's. */
export function proveBase(apiUrl: string): void {
  const { provenBases } = shared();
  if (!provenBases.includes(apiUrl)) provenBases.push(apiUrl);
}

/** Runs part of a read (a walk) counted as a read under way: a 404 to a fallback key waits for it (believe404). */
export async function underWay<T>(run: () => Promise<T>): Promise<T> {
  const state = shared();
  state.reads++;
  try {
    return await run();
  } finally {
    state.reads--;
  }
}

/**
 * A 404 to a read or delete means "gone" only when it is the API's answer about that object, to a
 * key of the account that holds it. Else it fails the operation, saying what to check: a key of
 * another account, or an API URL with a wrong path, sees 404 for everything.
 */
export async function believe404(
  method: string,
  conn: Connection,
  response: ApiResponse,
  options: RequestOptions,
  secrets: (string | undefined)[],
  get: Get,
): Promise<void> {
  const b = response.body as { error_code?: unknown } | undefined;
  const notBelieved = (why: string, hint: string) => {
    const err = describeError(options.what, 404, response.body, JSON.stringify(response.body ?? ""), secrets);
    err.hint = hint;
    return finish(setMessage(err, `${err.message}; not taken as deleted: ${why}`), 1, new URL(conn.apiUrl).origin);
  };
  const urlRight = `is ${conn.apiUrlSetting} (${conn.apiUrl}) right?`;
  if (!b || typeof b !== "object" || typeof b.error_code !== "string") {
    throw notBelieved("this is not an answer of the API", urlRight);
  }
  if (response.fallbackKey && !(await keyProven(response.fallbackKey))) {
    const unproven = unprovenFallback("read");
    throw notBelieved(unproven.why, unproven.hint);
  }
  const wrong = await baseProblem(conn, options.source, get);
  if (wrong) throw notBelieved(`${conn.apiUrl} does not answer as the API does (${wrong})`, urlRight);
  // Any key: a key of another account sees 404 for every object of the stack. Believed once the key
  // has seen one of them (or a sibling: another rule of its policy) in this process. ACCESSCTL_ACCEPT_GONE
  // is the user's say-so for a refresh's reads only (acceptGoneApplies): never in a create, update or
  // destroy, so a destroy never empties a state on the word of a key that sees none of its objects.
  const saidGone = acceptGoneApplies(method, currentOperation()?.kind, process.env.ACCESSCTL_ACCEPT_GONE);
  if (response.keyUsed && !(await keyProven(response.keyUsed)) && !saidGone) {
    const setting = settingName("apiKey", conn.apiKeyFrom === "env", conn.profile);
    throw notBelieved(
      `${setting} sees none of this stack's objects here (${await accountOf(conn, options.source, get)}): it may be ` +
        `the key of another account`,
      `set ${setting} to a key of the account that holds this stack's objects; if they were deleted outside Pulumi, ` +
        `\`ACCESSCTL_ACCEPT_GONE=1 pulumi refresh\` records them as gone`,
    );
  }
}

/**
 * Pure: whether ACCESSCTL_ACCEPT_GONE=1 lets a 404 to an unproven key stand as "gone": only a GET of
 * a `read` operation (a refresh). A delete, or any request of a create, update or destroy (whose
 * reads decide what is left to delete), or outside a known operation: never.
 */
export function acceptGoneApplies(method: string, kind: OperationKind | undefined, setting?: string): boolean {
  return setting === "1" && method === "GET" && kind === "read";
}

/** The account a key reaches, as its own API keys show it: their owners. */
async function accountOf(conn: Connection, source: ConfigSource | undefined, get: Get): Promise<string> {
  try {
    const res = await get("GET", API_KEYS_PATH, {
      what: "list API keys (which account the key reaches)",
      source,
      unseen: true,
      proof: true,
    });
    const owners = [...new Set(((res.body?.keys ?? []) as { owner_id?: unknown }[]).map((k) => String(k.owner_id)))];
    return owners.length
      ? `it reaches the account whose API keys belong to ${owners.slice(0, 3).join(", ")}` +
          `${owners.length > 3 ? ", …" : ""}`
      : "it reaches an account with no API keys listed";
  } catch (e) {
    return `which account it reaches is not known: ${(e as Error).message}`;
  }
}

/**
 * Whether the API URL serves the contract: undefined once it gave a contract-shaped answer in this
 * process, else what the proving request got (the full path it sent, and the answer). One proving
 * request per API URL at a time: the reads of a refresh share it.
 */
export async function baseProblem(
  conn: Connection,
  source: ConfigSource | undefined,
  get: Get,
): Promise<string | undefined> {
  const state = shared();
  if (state.provenBases.includes(conn.apiUrl)) return undefined;
  const proof = (state.proofs[conn.apiUrl] ??= proveBaseNow(conn, source, get).finally(
    () => delete state.proofs[conn.apiUrl],
  ));
  try {
    await proof;
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/**
 * Whether a fallback key has read an object of this stack. The other reads and deletes of this run
 * may show it yet: wait for them, a minute at most. (An attempt that is over is not counted among
 * them; those waiting here are not either.)
 */
export async function keyProven(digest: string): Promise<boolean> {
  const state = shared();
  const since = Date.now();
  while (!state.provenKeys.includes(digest) && state.reads > 0 && Date.now() - since < 60_000) await sleep(50);
  return state.provenKeys.includes(digest);
}

async function proveBaseNow(conn: Connection, source: ConfigSource | undefined, get: Get): Promise<void> {
  const sent = new URL(conn.apiUrl + PROOF_PATH);
  const what = `GET ${sent.pathname}${sent.search}`; // the full path sent: a wrong one shows here
  const res = await get("GET", PROOF_PATH, { what, source, unseen: true, proof: true });
  if (!Array.isArray(res.body?.ip_policy_rules)) throw failure(`${what}: HTTP ${res.status} but no list of rules`, {});
  proveBase(conn.apiUrl);
}
