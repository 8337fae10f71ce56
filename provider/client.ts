// The HTTP client of the API, on undici: the contract's headers, errors that read well in
// `pulumi up`, retries with backoff that never repeat a create the server may have acted on,
// one connection pool per process (and the rate limiter of ./limiter), timeouts, and paging.
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { Agent, Dispatcher, request } from "undici";
import { SERVICE_VERSION } from "../contract/common";
import { ConfigSource, connection, Connection, rejectApiKey } from "./config";
import { plainError, setMessage } from "./errors";
import { takeRateSlot } from "./limiter";
import { profileEnvVar } from "./profiles";
import { processState } from "./state";

const MAX_RESPONSE_BYTES = 8 << 20;
// One operation ends at most this long after its first attempt began (every wait counts: backoff,
// Retry-After, the rate limiter), plus at most one attempt's deadline.
const RETRY_BUDGET_MS = 5 * 60_000;
// One attempt: from sending to the last byte of the answer, however slowly the server trickles it.
const ATTEMPT_DEADLINE_MS = 60_000;
// No answer (headers), or no byte of the body, for this long ends the attempt sooner (undici's timeouts).
const AGENT_TIMEOUT_MS = 30_000;
// A service that refuses connections is down, not busy: a couple of quick retries, then say so.
const NOT_CONNECTED_RETRIES = 2;
// One walk of a list follows at most this many pages (100 objects each), and starts no page after
// this long (each page's retries stop there too): a walk ends within WALK_BUDGET_MS + one attempt.
const MAX_PAGES = 1000;
const WALK_BUDGET_MS = 120_000;
// What an error quotes of a server's text (its msg, or its body): at most this many characters.
const MAX_QUOTED = 300;
// The request that shows an API URL serves the contract (any key may list the account's rules).
const PROOF_PATH = "/ip_policy_rules?limit=1";

/** What a failed attempt means: worth another? could the server have acted on it (then a POST is not repeated)? */
interface Outcome {
  retry: boolean;
  mayHaveActed: boolean;
  /** Down or stuck, not busy: a couple of quick retries (NOT_CONNECTED_RETRIES), not minutes of them. */
  quick?: boolean;
  /** No connection was made: "cannot connect", and a hint. */
  down?: boolean;
}

const DOWN: Outcome = { retry: true, mayHaveActed: false, quick: true, down: true };
/**
 * Failed attempts by HTTP status or network error code; any other status is final, any other
 * network error is LOST. A plain object literal: Pulumi's closure serializer keeps no Set or Map.
 */
const OUTCOMES: Record<string, Outcome> = {
  429: { retry: true, mayHaveActed: false }, // limited before anything was done
  502: { retry: true, mayHaveActed: true }, // a gateway that may have forwarded the create: like a lost answer
  503: { retry: true, mayHaveActed: false },
  504: { retry: true, mayHaveActed: true },
  ECONNREFUSED: DOWN,
  ENOTFOUND: DOWN,
  EAI_AGAIN: DOWN,
  UND_ERR_CONNECT_TIMEOUT: DOWN,
  EHOSTUNREACH: DOWN,
  ENETUNREACH: DOWN,
  TIMEOUT: { retry: true, mayHaveActed: true, quick: true }, // no complete answer within the attempt's deadline
};
// undici's own timeouts (the Agent's headersTimeout and bodyTimeout) are timeouts too, not lost connections.
const TIMEOUT_CODES: Record<string, string> = { UND_ERR_HEADERS_TIMEOUT: "no answer within", UND_ERR_BODY_TIMEOUT: "the answer stopped for" };
/** A connection lost after the request went out: the server may have acted. */
const LOST: Outcome = { retry: true, mayHaveActed: true };

function outcomeOf(key: string): Outcome | undefined {
  return Object.prototype.hasOwnProperty.call(OUTCOMES, key) ? OUTCOMES[key] : undefined;
}

/** An API failure. A plain Error with fields: subclasses lose their message through Pulumi's serialization. */
export interface ApiFailure extends Error {
  status?: number; // HTTP status, when the server answered
  errorCode?: string;
  operationId?: string;
  /** True when a create may or may not have happened (the answer was lost). */
  ambiguous?: boolean;
  /** What to do about it, appended to the message when it is thrown. */
  hint?: string;
  /** When the attempt that may have acted was sent (Date.now()): what it made is no older. */
  sentAt?: number;
  /** A walk of a list stopped early (a loop, too many pages, its time budget): what it yielded is right but incomplete. */
  partial?: boolean;
}

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  /** Set when a fallback key (ACCESSCTL_API_KEY after a 401 to the config key) got this answer: its digest (see proveKey). */
  fallbackKey?: string;
}

interface ProcessState {
  agent?: Agent;
  counters: { requests: number; retries: number; rateLimited: number };
  /** origin → how an attempt there timed out with no answer: later requests fail at once, until one is answered. */
  silent: Record<string, string>;
  /** API URLs that gave a contract-shaped success in this process (an object, a list envelope). */
  provenBases: string[];
  /** In-flight proving requests, by API URL. */
  proofs: Record<string, Promise<void>>;
  /** Digests of fallback keys shown to be of the account that holds this stack's objects. */
  provenKeys: string[];
  /** Hints already given by an error of this process: later errors refer to the first. */
  hintsGiven: string[];
  /** Attempts of reads and deletes, and walks, under way: they may prove a fallback key (believe404 waits for them). */
  reads: number;
}

/** Per-process state, shared by every resource and by every serialized copy of this module. */
function shared(): ProcessState {
  return processState<ProcessState>("client", () => ({
    counters: { requests: 0, retries: 0, rateLimited: 0 }, silent: {}, provenBases: [], proofs: {}, provenKeys: [], hintsGiven: [], reads: 0,
  }));
}

/** A short digest of an API key, to remember facts about it without keeping it. */
export function keyDigest(apiKey: string): string {
  return createHash("sha256").update(apiKey).digest("hex").slice(0, 16);
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

/** Request counts of this process (tests and benchmarks read them). */
export function counters(): ProcessState["counters"] {
  return shared().counters;
}

function agent(): Agent {
  const state = shared();
  if (!state.agent) {
    state.agent = new Agent({ connections: 16, connectTimeout: 10_000, headersTimeout: AGENT_TIMEOUT_MS, bodyTimeout: AGENT_TIMEOUT_MS, keepAliveTimeout: 4_000 });
  }
  return state.agent;
}

// This file is dist/provider/client.js, two levels below package.json, installed or not. A string
// computed at load: a provider serialized by value (inside this repository) keeps it, whereas
// `__dirname` inside a function would name the loader's directory there.
const PACKAGE_JSON = path.join(__dirname, "..", "..", "package.json");

/** The User-Agent, with this package's version read from its package.json when a request is made (a small file; not hard-coded). */
function userAgent(): string {
  const { version } = JSON.parse(fs.readFileSync(PACKAGE_JSON, "utf8")) as { version: string };
  return `accessctl-pulumi/${version} node/${process.versions.node}`;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Builds a path whose interpolated values are each URL-encoded: ids never reach another path. */
export function apiPath(strings: TemplateStringsArray, ...values: string[]): string {
  for (const value of values) {
    // URL parsers read "." and ".." (even percent-encoded) as path steps: such an id is never sent.
    if (/^(\.|%2e){0,2}$/i.test(value)) throw failure(`invalid id ${JSON.stringify(value)}`, {});
  }
  return strings.reduce((out, s, i) => out + s + (i < values.length ? encodeURIComponent(values[i]) : ""), "");
}

/** Removes the API key and any token we know of from text headed for an error or a log. */
export function redact(text: string, secrets: (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) {
    if (!secret || secret.length < 8) continue;
    // In any case, and whatever starts with its first 16 characters (a key the server cut short).
    const head = secret.slice(0, 16).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    out = out.replace(new RegExp(`${head}[^\\s"'<>]*`, "gi"), "[redacted]");
  }
  return out;
}

/**
 * A server's text as an error may show it: terminal escapes and control characters removed, then
 * known secrets, any "token"-like field value (even one cut short), anything after "Bearer " and
 * long token-like strings redacted, and only then cut to `max` characters.
 */
export function quote(text: string, secrets: (string | undefined)[], max = MAX_QUOTED): string {
  const plain = text
    .replace(/\\u([0-9a-fA-F]{4})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) // a JSON escape hides nothing
    .replace(/\u001b(\[[0-?]*[ -\/]*[@-~]|\][^\u0007\u001b]*(\u0007|\u001b\\)?|[@-Z\\-_])?/g, "")
    .replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069]+/g, " ");
  const out = redact(plain, secrets)
    .replace(/\bBearer\s+[^\s"',;]+/gi, "Bearer [redacted]")
    .replace(/(["']?[\w-]*(?:token|key|secret|password)["']?\s*[:=]\s*["']?)[^"'\s,;}]*/gi, "$1[redacted]")
    .replace(/[A-Za-z0-9_\-+=~]{40,}/g, "[redacted]")
    .trim();
  return out.length > max ? `${out.slice(0, max)}…` : out;
}

const failure = (message: string, fields: Partial<ApiFailure>): ApiFailure => plainError(message, fields);

function describeError(what: string, status: number, body: unknown, text: string, secrets: (string | undefined)[]): ApiFailure {
  const b = (body ?? {}) as { error_code?: unknown; msg?: unknown; details?: { operation_id?: unknown } };
  const errorCode = typeof b.error_code === "string" ? b.error_code : undefined;
  const operationId = typeof b.details?.operation_id === "string" ? b.details.operation_id : undefined;
  // Redact before truncating: a key cut in half at the limit would leave its first characters.
  const shown = quote(text, secrets);
  const detail = typeof b.msg === "string" ? quote(b.msg, secrets) : shown ? `unexpected answer: ${shown}` : "empty answer";
  const message = `${what}: HTTP ${status}${errorCode ? ` ${errorCode}` : ""}: ${detail}${operationId ? ` (operation ${operationId})` : ""}`;
  return failure(redact(message, secrets), { status, errorCode, operationId });
}

async function readBody(body: Dispatcher.ResponseData["body"], what: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_RESPONSE_BYTES) {
      body.destroy();
      throw failure(`${what}: the answer is over ${MAX_RESPONSE_BYTES} bytes; giving up on it`, {});
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function backoff(attempt: number, retryAfter: string | undefined): number {
  // Retry-After is a number of seconds or an HTTP date.
  const seconds = retryAfter === undefined ? NaN : /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : (Date.parse(retryAfter) - Date.now()) / 1000;
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds, 120) * 1000 + Math.random() * 250;
  const ceiling = Math.min(30_000, 250 * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

export interface RequestOptions {
  /** What the caller was doing, for error messages ("create IP policy rule"). */
  what: string;
  body?: unknown;
  /** 404 is an answer, not an error (reads and deletes of objects that may be gone). */
  allow404?: boolean;
  /** Connection settings given by the caller (the program process); else the provider's configure / env. */
  source?: ConfigSource;
  /** Fields a successful answer must have ("ip_policy.id": "string"): an answer without them is an error, not empty state. */
  expect?: Record<string, "string" | "boolean" | "array">;
  /** Nobody sees this request's error (a walk whose failure costs GETs): it does not use up the advice (finish). */
  unseen?: boolean;
  /** Overrides of ATTEMPT_DEADLINE_MS and RETRY_BUDGET_MS (tests, and a walk's remaining budget). */
  deadlineMs?: number;
  budgetMs?: number;
}

/** Checks that an answer has the fields we turn into outputs, so that a short answer never wipes state. */
export function checkAnswer(body: unknown, expect: NonNullable<RequestOptions["expect"]>, what: string): void {
  for (const [field, type] of Object.entries(expect)) {
    const value = field.split(".").reduce<any>((v, k) => (v === null || typeof v !== "object" ? undefined : v[k]), body);
    const ok = type === "array" ? Array.isArray(value) : typeof value === type;
    if (!ok) throw failure(`${what}: the answer has no valid ${field} (expected a ${type}); nothing was changed in the state`, {});
  }
}

/** How one attempt ended: an answer for the caller, or a failure with its status or network error code. */
type Attempt<T> = { response: ApiResponse<T> } | { error: ApiFailure; status?: number; code?: string; retryAfter?: string };

/**
 * One attempt: send, read the answer within the attempt's deadline and size cap, parse it, check a
 * success has the fields we need. Throws what no retry can help (an answer we cannot use).
 */
async function attempt<T>(method: string, url: URL, headers: Record<string, string>, payload: string | undefined, options: RequestOptions, deadlineMs: number, secrets: (string | undefined)[]): Promise<Attempt<T>> {
  const deadline = AbortSignal.timeout(deadlineMs);
  const sentAt = Date.now();
  try {
    const res = await request(url, { method: method as Dispatcher.HttpMethod, headers, body: payload, dispatcher: agent(), signal: deadline });
    delete shared().silent[url.origin]; // it answers
    const succeeded = res.statusCode >= 200 && res.statusCode < 300;
    // A success we cannot use means a create may have happened all the same.
    const unusable = (e: ApiFailure) => Object.assign(e, { status: res.statusCode, ambiguous: method === "POST" && succeeded });
    const text = await readBody(res.body, options.what).catch((e) => {
      throw (e as { code?: string }).code || deadline.aborted ? e : unusable(e); // a network error mid-body goes the network way
    });
    let body: unknown = undefined;
    let parsed = true;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = false;
    }
    if (succeeded) {
      if (!parsed) throw unusable(failure(`${options.what}: HTTP ${res.statusCode} but the answer is not JSON: ${quote(text, secrets)}`, {}));
      if (options.expect && res.statusCode !== 204) {
        try {
          checkAnswer(body, options.expect, options.what);
        } catch (e) {
          throw unusable(e as ApiFailure);
        }
      }
      // The service's clock, from its own successes only (a gateway's 502 carries the gateway's Date):
      // the Date header, in whole seconds, and the creation time of what a create made.
      const date = res.headers.date;
      noteServerTime(url.origin, Date.parse(Array.isArray(date) ? date[0] : (date ?? "")), 1000, sentAt);
      const createdAt = method === "POST" ? (body as { created_at?: unknown } | undefined)?.created_at : undefined;
      if (typeof createdAt === "string") noteServerTime(url.origin, Date.parse(createdAt), timeResolution(createdAt), sentAt);
      return { response: { status: res.statusCode, body: body as T } };
    }
    if (res.statusCode === 404 && options.allow404) return { response: { status: 404, body: body as T } };
    const header = res.headers["retry-after"];
    return { error: describeError(options.what, res.statusCode, body, text, secrets), status: res.statusCode, retryAfter: Array.isArray(header) ? header[0] : header };
  } catch (e) {
    const err = e as ApiFailure & { code?: string };
    if (err.status !== undefined || !(err.code || deadline.aborted)) throw err; // an answer we already judged, or our own failure
    const undiciTimeout = err.code && Object.prototype.hasOwnProperty.call(TIMEOUT_CODES, err.code) ? TIMEOUT_CODES[err.code] : undefined;
    const code = deadline.aborted || undiciTimeout ? "TIMEOUT" : String(err.code);
    const detail = deadline.aborted ? `no complete answer within ${deadlineMs / 1000} s` : undiciTimeout ? `${undiciTimeout} ${AGENT_TIMEOUT_MS / 1000} s` : outcomeOf(code)?.down ? "cannot connect" : err.message;
    const error = failure(quote(`${options.what}: ${code}: ${detail} (${url.origin})`, secrets, 1000), {});
    if (outcomeOf(code)?.down || code === "TIMEOUT") error.hint = "is the service up, and is accessctl:apiUrl right?";
    // The service accepts and does not answer: the rest of this process fails at once instead of waiting again.
    if (code === "TIMEOUT") shared().silent[url.origin] = `${code}: ${detail}`;
    return { error, code };
  }
}

/** One API operation, with retries. `pathOrUrl` is a path (use apiPath) or a URL on the API's origin. */
export async function api<T = any>(method: string, pathOrUrl: string, options: RequestOptions): Promise<ApiResponse<T>> {
  let conn = connection(options.source);
  // A path is appended to the API URL (which may have a path of its own); a next_page_uri is absolute.
  const url = new URL(pathOrUrl.startsWith("/") ? conn.apiUrl + pathOrUrl : pathOrUrl);
  if (url.origin !== new URL(conn.apiUrl).origin) {
    throw failure(`${options.what}: refusing to send the API key to ${url.origin}, which is not the configured API (${new URL(conn.apiUrl).origin})`, {});
  }
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = {
    authorization: `Bearer ${conn.apiKey}`,
    "service-version": SERVICE_VERSION,
    "user-agent": userAgent(),
    accept: "application/json",
  };
  if (payload !== undefined) headers["content-type"] = "application/json";
  const state = shared();
  const deadlineMs = options.deadlineMs ?? ATTEMPT_DEADLINE_MS;
  const budgetMs = options.budgetMs ?? RETRY_BUDGET_MS;
  let retries = conn.maxRetries;
  let started = 0;
  let blockFor = 0;
  let lastError: ApiFailure | undefined;
  for (let n = 0; ; n++) {
    checkNotSilent(url, options, n);
    // A create names nothing of the stack's account (a key names nothing at all): through a fallback
    // key not proven to be of that account, it could make the object in another account.
    if (method === "POST" && conn.rejected && !(await keyProven(keyDigest(conn.apiKey)))) {
      const err = failure(`${options.what}: not sent: accessctl:apiKey was refused and ACCESSCTL_API_KEY, used instead, has not read any object of this stack, so it may belong to another account`, {});
      err.hint = "set accessctl:apiKey to a live key of the stack's account (`pulumi config set --secret accessctl:apiKey …`), or ACCESSCTL_API_KEY to one, and run `pulumi up` again";
      throw finish(err, n + 1, url.origin, options.unseen);
    }
    const sent = await takeRateSlot(conn, blockFor);
    try {
      checkNotSilent(url, options, n); // it may have fallen silent during the wait
    } catch (e) {
      sent();
      throw e;
    }
    // The limiter's queue can be longer than the Retry-After we asked for: that wait counts too.
    if (lastError && Date.now() - started > budgetMs) {
      sent();
      throw finish(lastError, n, url.origin, options.unseen);
    }
    blockFor = 0;
    if (n === 0) started = Date.now();
    state.counters.requests++;
    const sentAt = Date.now();
    const run = () => attempt<T>(method, url, headers, payload, options, deadlineMs, [conn.apiKey, conn.fallbackApiKey]);
    // a read or delete under way: see believe404
    const result = await (options.allow404 ? underWay(run) : run()).catch((e) => {
      sent();
      throw Object.assign(e as ApiFailure, { sentAt });
    });
    sent("response" in result ? result.response.status : result.status);
    if ("response" in result) {
      const response = conn.rejected ? { ...result.response, fallbackKey: keyDigest(conn.apiKey) } : result.response;
      if (options.allow404 && response.status === 404) await believe404(conn, response, options, [conn.apiKey, conn.fallbackApiKey]);
      else if (options.allow404) proveKey(response.fallbackKey); // a read or delete of an object this stack holds worked
      if (options.expect && response.status !== 204) proveBase(conn.apiUrl);
      return response;
    }
    if (result.status === 401 && conn.fallbackApiKey) {
      // The key from the stack config was refused (the state holds the config of the last update,
      // so a rotated key lives on in it): try the one in ACCESSCTL_API_KEY, once, and keep to it.
      rejectApiKey(conn.apiKey);
      conn = { ...conn, apiKey: conn.fallbackApiKey, apiKeyFrom: "env", fallbackApiKey: undefined, rejected: true };
      headers.authorization = `Bearer ${conn.apiKey}`;
      continue;
    }
    lastError = result.error;
    if (result.status === 401) lastError.hint = authHint(conn);
    const outcome = result.status !== undefined ? outcomeOf(String(result.status)) : (outcomeOf(result.code!) ?? LOST);
    if (!outcome?.retry) throw finish(lastError, 1, url.origin, options.unseen);
    // No retry to a service that let an attempt time out with no answer (this one, or another one's).
    if (state.silent[url.origin] !== undefined) throw finish(lastError, n + 1, url.origin, options.unseen);
    lastError.ambiguous = method === "POST" && outcome.mayHaveActed;
    lastError.sentAt = sentAt;
    if (outcome.quick) retries = Math.min(retries, NOT_CONNECTED_RETRIES);
    if (result.status === 429) {
      state.counters.rateLimited++;
      blockFor = backoff(n, result.retryAfter);
    }
    const delay = blockFor || backoff(n, result.retryAfter);
    if (lastError.ambiguous || n >= retries || Date.now() - started + delay > budgetMs) throw finish(lastError, n + 1, url.origin, options.unseen);
    state.counters.retries++;
    if (!blockFor) await sleep(delay);
  }
}

/** An earlier attempt to this origin timed out with no answer: fail now rather than wait again. */
function checkNotSilent(url: URL, options: RequestOptions, n: number): void {
  const earlier = shared().silent[url.origin];
  if (earlier === undefined) return;
  const err = failure(`${options.what}: not sent: ${url.origin} did not answer an earlier request of this run (${earlier})`, {});
  err.hint = "is the service up, and is accessctl:apiUrl right?";
  throw finish(err, n + 1, url.origin, options.unseen);
}

/**
 * A 404 to a read or delete means "gone" only when it is the API's answer about that object, to a
 * key of the account that holds it. Else it fails the operation, saying what to check: a key of
 * another account, or an API URL with a wrong path, sees 404 for everything.
 */
async function believe404(conn: Connection, response: ApiResponse, options: RequestOptions, secrets: (string | undefined)[]): Promise<void> {
  const b = response.body as { error_code?: unknown } | undefined;
  const notBelieved = (why: string, hint: string) => {
    const err = describeError(options.what, 404, response.body, JSON.stringify(response.body ?? ""), secrets);
    err.hint = hint;
    return finish(setMessage(err, `${err.message}; not taken as deleted: ${why}`), 1, new URL(conn.apiUrl).origin);
  };
  if (!b || typeof b !== "object" || typeof b.error_code !== "string") {
    throw notBelieved("this is not an answer of the API", "is accessctl:apiUrl right?");
  }
  const state = shared();
  if (response.fallbackKey && !(await keyProven(response.fallbackKey))) {
    throw notBelieved(
      "accessctl:apiKey was refused and ACCESSCTL_API_KEY, used instead, has not read any object of this stack, so it may belong to another account",
      "set ACCESSCTL_API_KEY to a key of the account that holds this stack's objects, or set accessctl:apiKey to one and run `pulumi up` (or add --run-program)",
    );
  }
  if (state.provenBases.includes(conn.apiUrl)) return;
  // One proving request per API URL at a time: the reads of a refresh share it.
  const proof = (state.proofs[conn.apiUrl] ??= proveBaseNow(conn, options.source).finally(() => delete state.proofs[conn.apiUrl]));
  try {
    await proof;
  } catch (e) {
    throw notBelieved(`${conn.apiUrl} does not answer as the API does (${(e as Error).message})`, "is accessctl:apiUrl right?");
  }
}

/**
 * Whether a fallback key has read an object of this stack. The other reads and deletes of this run
 * may show it yet: wait for them, a minute at most. (An attempt that is over is not counted among
 * them; those waiting here are not either.)
 */
async function keyProven(digest: string): Promise<boolean> {
  const state = shared();
  const since = Date.now();
  while (!state.provenKeys.includes(digest) && state.reads > 0 && Date.now() - since < 60_000) await sleep(50);
  return state.provenKeys.includes(digest);
}

async function proveBaseNow(conn: Connection, source: ConfigSource | undefined): Promise<void> {
  const what = `GET ${PROOF_PATH}`;
  const res = await api<Record<string, unknown>>("GET", PROOF_PATH, { what, source, unseen: true });
  if (!Array.isArray(res.body?.ip_policy_rules)) throw failure(`${what}: HTTP ${res.status} but no list of rules`, {});
  proveBase(conn.apiUrl);
}

/** The error an operation ends with: how many attempts it took, and what to do about it (once per process). */
function finish(err: ApiFailure, attempts: number, origin: string, unseen?: boolean): ApiFailure {
  // Once per service: a refresh of 24 resources shows the advice once, not 24 times.
  const given = shared().hintsGiven;
  const key = `${origin} ${err.hint}`;
  const hint = !err.hint ? "" : given.includes(key) ? "; what to do: see the one error of this run that says it in full" : `; ${err.hint}`;
  if (err.hint && !unseen && !given.includes(key)) given.push(key);
  err.hint = undefined;
  return setMessage(err, `${err.message}${attempts > 1 ? ` (after ${attempts} attempts)` : ""}${hint}`);
}

/** What to do about a refused API key, by where it came from. */
function authHint(conn: Connection): string {
  if (conn.profile) {
    return `the API key of profile "${conn.profile}" (accessctl:profiles.${conn.profile}.apiKey, else ${profileEnvVar(conn.profile, "API_KEY")}) was refused: set it to a live API key of that account; ` +
      "after rotating a key kept in stack config, run `pulumi up` or `pulumi refresh --run-program` first (refresh uses the config saved in the state)";
  }
  if (conn.rejected) return "neither accessctl:apiKey (as saved in the state) nor ACCESSCTL_API_KEY was accepted: set ACCESSCTL_API_KEY to a live API key of this account";
  if (conn.apiKeyFrom === "env") return "the API key in ACCESSCTL_API_KEY was refused: set it to a live API key of this account";
  return (
    "the API key in accessctl:apiKey was refused. `pulumi refresh` and `--refresh` use the key saved in the state by the last update, " +
    "not the one in Pulumi.<stack>.yaml: if you have set the new key there, add --run-program (`pulumi refresh --run-program`, " +
    "`pulumi up --refresh --run-program`) so that it is used and saved, or run `pulumi up` without --refresh first, or set ACCESSCTL_API_KEY to the new key"
  );
}

export interface WalkLimits {
  /** Pages followed at most (MAX_PAGES). */
  maxPages?: number;
  /** No page is started after this long (WALK_BUDGET_MS); tests set less. */
  budgetMs?: number;
  /** See RequestOptions.unseen. */
  unseen?: boolean;
}

/**
 * The one page walker: the pages of a list, following next_page_uri. A 404 or any answer without
 * the list is an error, never an empty list. It throws, with `partial: true` (what was yielded is
 * right, only incomplete), at a next_page_uri seen before, at a page that brings no new id (the
 * same page under another URI), after `maxPages` pages, and when its time budget is spent.
 */
export async function* listPages<T>(path: string, field: string, what: string, source?: ConfigSource, limits: WalkLimits = {}): AsyncGenerator<{ items: T[]; fallbackKey?: string }> {
  const { apiUrl, apiKey } = connection(source);
  const maxPages = limits.maxPages ?? MAX_PAGES;
  const budgetMs = limits.budgetMs ?? WALK_BUDGET_MS;
  const started = Date.now();
  const absolute = (uri: string) => new URL(uri.startsWith("/") ? apiUrl + uri : uri).href;
  const partial = (message: string) => failure(redact(`${what}: ${message}; giving up on the list`, [apiKey]), { partial: true });
  const seen: string[] = [];
  const ids = Object.create(null) as Record<string, boolean>; // ids come from the server: no prototype
  let next: string | null = path;
  while (next) {
    if (seen.length >= maxPages) throw partial(`more than ${maxPages} pages`);
    const left = budgetMs - (Date.now() - started);
    if (left <= 0) throw partial(`${seen.length} pages read in ${budgetMs / 1000} s and the list goes on`);
    seen.push(absolute(next));
    const page: ApiResponse<Record<string, unknown>> = await api("GET", next, { what, source, budgetMs: left, unseen: limits.unseen });
    const items = page.body?.[field];
    if (!Array.isArray(items)) throw failure(`${what}: the answer has no ${field} list`, { status: page.status });
    proveBase(apiUrl);
    let fresh = 0;
    for (const item of items) {
      const id = String((item as { id?: unknown })?.id);
      if (!ids[id]) fresh++;
      ids[id] = true;
    }
    yield { items: items as T[], fallbackKey: page.fallbackKey };
    if (items.length > 0 && fresh === 0) throw partial("a page brought no new object (the same page again)");
    const nextUri = page.body.next_page_uri;
    next = typeof nextUri === "string" && nextUri ? nextUri : null;
    if (next && seen.includes(absolute(next))) throw partial(`next_page_uri leads back to a page already read (${next})`);
  }
}

/** Every item of a list (see listPages). */
export async function* listAll<T>(path: string, field: string, what: string, source?: ConfigSource, limits?: WalkLimits): AsyncGenerator<T> {
  for await (const page of listPages<T>(path, field, what, source, limits)) yield* page.items;
}

/** Bounds on the service's clock minus ours (ms), learnt from its answers; undefined until one told. */
export interface ClockBounds {
  lower?: number;
  upper?: number;
}

/**
 * What the answers of the service at `source`'s API URL tell of its clock. Recovery takes over or
 * deletes only what was created at or after `sentAt + upper` (provider/ownership.ts): provably
 * after a request of ours was sent.
 */
export function serverClock(source?: ConfigSource): ClockBounds {
  const bounds = clocks()[new URL(connection(source).apiUrl).origin];
  // Bounds that contradict each other: some answer's time was not the service's (a cache, a proxy
  // that rewrites it); the clock is unknown, and nothing is taken over or deleted on its word.
  if (!bounds || (bounds.lower !== undefined && bounds.upper !== undefined && bounds.lower > bounds.upper)) return {};
  return { ...bounds };
}

function clocks(): Record<string, ClockBounds> {
  return processState<Record<string, ClockBounds>>("server-clock", () => ({}));
}

/**
 * The service read `serverMs` on its clock, cut to `resolutionMs`, at some moment between `sentAt`
 * (ours) and now: its clock minus ours is at least `serverMs - now` and less than
 * `serverMs + resolutionMs - sentAt`. The tightest bounds seen are kept.
 */
function noteServerTime(origin: string, serverMs: number, resolutionMs: number, sentAt: number): void {
  if (!Number.isFinite(serverMs)) return;
  const bounds = (clocks()[origin] ??= {});
  const lower = serverMs - Date.now();
  const upper = serverMs + resolutionMs - sentAt;
  if (bounds.lower === undefined || lower > bounds.lower) bounds.lower = lower;
  if (bounds.upper === undefined || upper < bounds.upper) bounds.upper = upper;
}

/** The resolution an RFC 3339 time proves: its fraction of a second without trailing zeros, else a whole second. */
function timeResolution(time: string): number {
  // Trailing zeros prove nothing: ".000Z" may be whole seconds printed with a fraction.
  const digits = (/\.(\d+)/.exec(time)?.[1] ?? "").replace(/0+$/, "");
  return digits ? Math.max(1, 1000 / 10 ** digits.length) : 1000;
}
