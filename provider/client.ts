// The HTTP client of the API, on undici: the contract's headers, errors that read well in
// `pulumi up`, retries with backoff that never repeat a create the server may have acted on,
// one connection pool per process (and the rate limiter of ./limiter), timeouts, and paging.
import * as fs from "node:fs";
import * as path from "node:path";
import { Agent, Dispatcher, request } from "undici";
import { SERVICE_VERSION } from "../contract/common";
import { ConfigSource, connection, Connection, rejectApiKey } from "./config";
import { plainError, setMessage } from "./errors";
import { takeRateSlot } from "./limiter";

const MAX_RESPONSE_BYTES = 8 << 20;
// One operation ends at most this long after its first attempt began (every wait counts: backoff,
// Retry-After, the rate limiter), plus at most one attempt's deadline.
const RETRY_BUDGET_MS = 5 * 60_000;
// One attempt: from sending to the last byte of the answer, however slowly the server trickles it.
const ATTEMPT_DEADLINE_MS = 60_000;
// A service that refuses connections is down, not busy: a couple of quick retries, then say so.
const NOT_CONNECTED_RETRIES = 2;
// One walk of a list follows at most this many pages (100 objects each).
const MAX_PAGES = 1000;

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
}

export interface ApiResponse<T = any> {
  status: number;
  body: T;
}

interface ProcessState {
  agent?: Agent;
  counters: { requests: number; retries: number; rateLimited: number };
}

/** Per-process state, shared by every resource and by every serialized copy of this module. */
function shared(): ProcessState {
  const key = Symbol.for("@accessctl/pulumi/client");
  const global = globalThis as unknown as Record<symbol, ProcessState | undefined>;
  let state = global[key];
  if (!state) {
    state = { counters: { requests: 0, retries: 0, rateLimited: 0 } };
    global[key] = state;
  }
  return state;
}

/** Request counts of this process (tests and benchmarks read them). */
export function counters(): ProcessState["counters"] {
  return shared().counters;
}

function agent(): Agent {
  const state = shared();
  if (!state.agent) {
    state.agent = new Agent({ connections: 16, connectTimeout: 10_000, headersTimeout: 30_000, bodyTimeout: 30_000, keepAliveTimeout: 4_000 });
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
  for (const secret of secrets) if (secret && secret.length >= 8) out = out.split(secret).join("[redacted]");
  return out;
}

const failure = (message: string, fields: Partial<ApiFailure>): ApiFailure => plainError(message, fields);

function describeError(what: string, status: number, body: unknown, text: string, secrets: (string | undefined)[]): ApiFailure {
  const b = (body ?? {}) as { error_code?: unknown; msg?: unknown; details?: { operation_id?: unknown } };
  const errorCode = typeof b.error_code === "string" ? b.error_code : undefined;
  const operationId = typeof b.details?.operation_id === "string" ? b.details.operation_id : undefined;
  // Redact before truncating: a key cut in half at the limit would leave its first characters.
  const shown = redact(text.trim(), secrets).slice(0, 200);
  const detail = typeof b.msg === "string" ? b.msg : shown ? `unexpected answer: ${shown}` : "empty answer";
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
  /** Overrides of ATTEMPT_DEADLINE_MS and RETRY_BUDGET_MS (tests). */
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
  try {
    const res = await request(url, { method: method as Dispatcher.HttpMethod, headers, body: payload, dispatcher: agent(), signal: deadline });
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
      if (!parsed) throw unusable(failure(`${options.what}: HTTP ${res.statusCode} but the answer is not JSON: ${redact(text, secrets).slice(0, 200)}`, {}));
      if (options.expect && res.statusCode !== 204) {
        try {
          checkAnswer(body, options.expect, options.what);
        } catch (e) {
          throw unusable(e as ApiFailure);
        }
      }
      return { response: { status: res.statusCode, body: body as T } };
    }
    if (res.statusCode === 404 && options.allow404) return { response: { status: 404, body: body as T } };
    const header = res.headers["retry-after"];
    return { error: describeError(options.what, res.statusCode, body, text, secrets), status: res.statusCode, retryAfter: Array.isArray(header) ? header[0] : header };
  } catch (e) {
    const err = e as ApiFailure & { code?: string };
    if (err.status !== undefined || !(err.code || deadline.aborted)) throw err; // an answer we already judged, or our own failure
    const code = deadline.aborted ? "TIMEOUT" : String(err.code);
    const detail = deadline.aborted ? `no complete answer within ${deadlineMs / 1000} s` : outcomeOf(code)?.down ? "cannot connect" : err.message;
    const error = failure(redact(`${options.what}: ${code}: ${detail} (${url.origin})`, secrets), {});
    if (outcomeOf(code)?.down) error.hint = "is the service up, and is accessctl:apiUrl right?";
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
    const sent = await takeRateSlot(conn, blockFor);
    // The limiter's queue can be longer than the Retry-After we asked for: that wait counts too.
    if (lastError && Date.now() - started > budgetMs) {
      sent();
      throw finish(lastError, n);
    }
    blockFor = 0;
    if (n === 0) started = Date.now();
    state.counters.requests++;
    const result = await attempt<T>(method, url, headers, payload, options, deadlineMs, [conn.apiKey, conn.fallbackApiKey]).catch((e) => {
      sent();
      throw e;
    });
    sent("response" in result ? result.response.status : result.status);
    if ("response" in result) return result.response;
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
    if (!outcome?.retry) throw finish(lastError, 1);
    lastError.ambiguous = method === "POST" && outcome.mayHaveActed;
    if (outcome.quick) retries = Math.min(retries, NOT_CONNECTED_RETRIES);
    if (result.status === 429) {
      state.counters.rateLimited++;
      blockFor = backoff(n, result.retryAfter);
    }
    const delay = blockFor || backoff(n, result.retryAfter);
    if (lastError.ambiguous || n >= retries || Date.now() - started + delay > budgetMs) throw finish(lastError, n + 1);
    state.counters.retries++;
    if (!blockFor) await sleep(delay);
  }
}

/** The error an operation ends with: how many attempts it took, and what to do about it. */
function finish(err: ApiFailure, attempts: number): ApiFailure {
  const hint = err.hint ? `; ${err.hint}` : "";
  err.hint = undefined;
  return setMessage(err, `${err.message}${attempts > 1 ? ` (after ${attempts} attempts)` : ""}${hint}`);
}

/** What to do about a refused API key, by where it came from. */
function authHint(conn: Connection): string {
  if (conn.profile) {
    const env = `ACCESSCTL_${conn.profile.toUpperCase().replace(/-/g, "_")}_API_KEY`;
    return `the API key of profile "${conn.profile}" (accessctl:profiles.${conn.profile}.apiKey, else ${env}) was refused: set it to a live API key of that account; ` +
      "after rotating a key kept in stack config, run `pulumi up` or `pulumi refresh --run-program` first (refresh uses the config saved in the state)";
  }
  if (conn.rejected) return "neither accessctl:apiKey (as saved in the state) nor ACCESSCTL_API_KEY was accepted: set ACCESSCTL_API_KEY to a live API key of this account";
  if (conn.apiKeyFrom === "env") return "the API key in ACCESSCTL_API_KEY was refused: set it to a live API key of this account";
  return (
    "the API key in accessctl:apiKey was refused. `pulumi refresh` and `--refresh` use the stack config saved in the state by the last update, " +
    "not the current one: after rotating the key, add --run-program (`pulumi refresh --run-program`, `pulumi up --refresh --run-program`), " +
    "or run `pulumi up` without --refresh first, or set ACCESSCTL_API_KEY to the new key"
  );
}

/** Every item of a list, following next_page_uri to the end; a page seen twice, or too many pages, end the walk. */
export async function* listAll<T>(path: string, field: string, what: string, source?: ConfigSource): AsyncGenerator<T> {
  const { apiUrl, apiKey } = connection(source);
  const absolute = (uri: string) => new URL(uri.startsWith("/") ? apiUrl + uri : uri).href;
  const seen: string[] = [];
  let next: string | null = path;
  while (next) {
    if (seen.length >= MAX_PAGES) throw failure(`${what}: more than ${MAX_PAGES} pages; giving up on the list`, {});
    seen.push(absolute(next));
    const page: ApiResponse<Record<string, unknown>> = await api("GET", next, { what, source });
    const items = page.body?.[field];
    if (!Array.isArray(items)) throw failure(`${what}: the answer has no ${field} list`, { status: page.status });
    for (const item of items) yield item as T;
    const nextUri = page.body.next_page_uri;
    next = typeof nextUri === "string" && nextUri ? nextUri : null;
    if (next && seen.includes(absolute(next))) {
      throw failure(redact(`${what}: next_page_uri leads back to a page already read (${next}); giving up on the list`, [apiKey]), {});
    }
  }
}
