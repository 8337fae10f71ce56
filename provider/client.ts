// The HTTP client of the API, on undici: the contract's headers, errors that read well in
// `pulumi up`, retries with backoff that never repeat a create the server may have acted on,
// one connection pool per process (and the rate limiter of ./limiter), timeouts, and paging.
import { Agent, Dispatcher, request } from "undici";
import { ConfigSource, connection, Connection } from "./config";
import { takeRateSlot } from "./limiter";

const PACKAGE_VERSION = "0.1.0";
const USER_AGENT = `accessctl-pulumi/${PACKAGE_VERSION} node/${process.versions.node}`;
const MAX_RESPONSE_BYTES = 8 << 20;
const RETRY_BUDGET_MS = 5 * 60_000; // time spent retrying one operation, not counting rate-limiter waits
// Arrays, not Sets: Pulumi's closure serializer turns a captured Set into a plain object.
const RETRYABLE_STATUSES = [429, 502, 503, 504];
// Statuses and network errors after which the server cannot have acted on the request.
const NOT_ACTED_STATUSES = [429, 503];
const NOT_CONNECTED_CODES = ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT", "EHOSTUNREACH", "ENETUNREACH"];

/** An API failure. A plain Error with fields: subclasses lose their message through Pulumi's serialization. */
export interface ApiFailure extends Error {
  status?: number; // HTTP status, when the server answered
  errorCode?: string;
  operationId?: string;
  /** True when a create may or may not have happened (the answer was lost). */
  ambiguous?: boolean;
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

function failure(message: string, fields: Partial<ApiFailure>): ApiFailure {
  return Object.assign(new Error(message), fields);
}

function describeError(what: string, status: number, body: unknown, text: string, conn: Connection): ApiFailure {
  const b = (body ?? {}) as { error_code?: unknown; msg?: unknown; details?: { operation_id?: unknown } };
  const errorCode = typeof b.error_code === "string" ? b.error_code : undefined;
  const operationId = typeof b.details?.operation_id === "string" ? b.details.operation_id : undefined;
  const detail = typeof b.msg === "string" ? b.msg : text.trim() ? `unexpected answer: ${text.trim().slice(0, 200)}` : "empty answer";
  const message = `${what}: HTTP ${status}${errorCode ? ` ${errorCode}` : ""}: ${detail}${operationId ? ` (operation ${operationId})` : ""}`;
  return failure(redact(message, [conn.apiKey]), { status, errorCode, operationId });
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
}

/** Checks that an answer has the fields we turn into outputs, so that a short answer never wipes state. */
export function checkAnswer(body: unknown, expect: NonNullable<RequestOptions["expect"]>, what: string): void {
  for (const [field, type] of Object.entries(expect)) {
    const value = field.split(".").reduce<any>((v, k) => (v === null || typeof v !== "object" ? undefined : v[k]), body);
    const ok = type === "array" ? Array.isArray(value) : typeof value === type;
    if (!ok) throw failure(`${what}: the answer has no valid ${field} (expected a ${type}); nothing was changed in the state`, {});
  }
}

/** One API operation, with retries. `pathOrUrl` is a path (use apiPath) or a URL on the API's origin. */
export async function api<T = any>(method: string, pathOrUrl: string, options: RequestOptions): Promise<ApiResponse<T>> {
  const conn = connection(options.source);
  // A path is appended to the API URL (which may have a path of its own); a next_page_uri is absolute.
  const url = new URL(pathOrUrl.startsWith("/") ? conn.apiUrl + pathOrUrl : pathOrUrl);
  if (url.origin !== new URL(conn.apiUrl).origin) {
    throw failure(`${options.what}: refusing to send the API key to ${url.origin}, which is not the configured API (${new URL(conn.apiUrl).origin})`, {});
  }
  const isPost = method === "POST";
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = {
    authorization: `Bearer ${conn.apiKey}`,
    "service-version": "2",
    "user-agent": USER_AGENT,
    accept: "application/json",
  };
  if (payload !== undefined) headers["content-type"] = "application/json";
  const state = shared();
  let spent = 0;
  let blockFor = 0;
  for (let attempt = 0; ; attempt++) {
    await takeRateSlot(conn, blockFor);
    blockFor = 0;
    const started = Date.now();
    state.counters.requests++;
    let retryAfter: string | undefined;
    let lastError: ApiFailure;
    let safeToRepeat: boolean;
    try {
      const res = await request(url, { method: method as Dispatcher.HttpMethod, headers, body: payload, dispatcher: agent() });
      const succeeded = res.statusCode >= 200 && res.statusCode < 300;
      // A success we cannot use means a create may have happened all the same.
      const unusable = (e: ApiFailure) => Object.assign(e, { status: res.statusCode, ambiguous: isPost && succeeded });
      const text = await readBody(res.body, options.what).catch((e) => {
        throw (e as { code?: string }).code ? e : unusable(e); // a network error mid-body goes the network way
      });
      let body: unknown = undefined;
      let parsed = true;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = false;
      }
      if (succeeded) {
        if (!parsed) throw unusable(failure(`${options.what}: HTTP ${res.statusCode} but the answer is not JSON: ${redact(text.slice(0, 200), [conn.apiKey])}`, {}));
        if (options.expect && res.statusCode !== 204) {
          try {
            checkAnswer(body, options.expect, options.what);
          } catch (e) {
            throw unusable(e as ApiFailure);
          }
        }
        return { status: res.statusCode, body: body as T };
      }
      if (res.statusCode === 404 && options.allow404) return { status: 404, body: body as T };
      lastError = describeError(options.what, res.statusCode, body, text, conn);
      if (!RETRYABLE_STATUSES.includes(res.statusCode)) throw lastError;
      const header = res.headers["retry-after"];
      retryAfter = Array.isArray(header) ? header[0] : header;
      if (res.statusCode === 429) {
        state.counters.rateLimited++;
        blockFor = backoff(attempt, retryAfter);
      }
      safeToRepeat = !isPost || NOT_ACTED_STATUSES.includes(res.statusCode);
    } catch (e) {
      const err = e as ApiFailure & { code?: string };
      if (err.status !== undefined || !err.code) throw err; // an answer we already judged, or our own failure
      const connected = !NOT_CONNECTED_CODES.includes(err.code);
      lastError = failure(redact(`${options.what}: ${err.code}: ${err.message} (${url.origin})`, [conn.apiKey]), { ambiguous: isPost && connected });
      safeToRepeat = !isPost || !connected;
    }
    spent += Date.now() - started;
    const delay = blockFor || backoff(attempt, retryAfter);
    if (!safeToRepeat || attempt >= conn.maxRetries || spent + delay > RETRY_BUDGET_MS) {
      if (attempt > 0) lastError.message += ` (after ${attempt + 1} attempts)`;
      throw lastError;
    }
    state.counters.retries++;
    if (!blockFor) await sleep(delay);
    spent += blockFor ? 0 : delay;
  }
}

/** Every item of a list, following next_page_uri to the end. */
export async function* listAll<T>(path: string, field: string, what: string, source?: ConfigSource): AsyncGenerator<T> {
  let next: string | null = path;
  while (next) {
    const page: ApiResponse<Record<string, unknown>> = await api("GET", next, { what, source });
    const items = page.body?.[field];
    if (!Array.isArray(items)) throw failure(`${what}: the answer has no ${field} list`, { status: page.status });
    for (const item of items) yield item as T;
    const nextUri = page.body.next_page_uri;
    next = typeof nextUri === "string" && nextUri ? nextUri : null;
  }
}
